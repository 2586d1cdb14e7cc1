import Foundation
import Service

// A top-level throw would crash with a backtrace (SIGILL); every error becomes one line instead.
exit(CommandLineInterface.main(Array(CommandLine.arguments.dropFirst())))
