/// Apple's certificate authorities shipped with the binary.
public enum AppleRoots {
    /// Apple Root CA - G3 (DER), the default trust anchor for App Store signed data.
    /// SHA-256 63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179.
    public static var g3DER: [UInt8] { appleRootCAG3DER }
}
