import CLI
import Foundation
import TestStore

// The composition of the two command sets: the CLI's commands, and the test store's `testkit`
// (TestStore), which reads its config.json through the service's loader. Neither CLI nor
// Service imports the test store. A top-level throw would crash with a backtrace (SIGILL);
// every error becomes one line instead.
exit(
    CommandLineInterface.main(
        Array(CommandLine.arguments.dropFirst()),
        more: ["testkit": { try TestkitCommand.run($0, configuration: TestkitConfiguration.load) }]))
