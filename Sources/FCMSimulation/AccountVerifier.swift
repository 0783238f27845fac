import TLSTransport

/// A configured service account and its RS256 public key.
struct AccountVerifier: Sendable {
    let account: FCMSimulatedAccount
    private let verify: @Sendable (_ signature: [UInt8], _ data: [UInt8]) -> Bool

    init(account: FCMSimulatedAccount) throws {
        self.account = account
        // Placeholder until TLSTransport's RSAPublicKey is merged: refuses every signature.
        self.verify = { _, _ in false }
    }

    func verifies(signature: [UInt8], over data: [UInt8]) -> Bool {
        verify(signature, data)
    }
}
