import TLSTransport

/// A configured service account and its RS256 public key.
struct AccountVerifier: Sendable {
    let account: FCMSimulatedAccount
    private let key: RSAPublicKey

    /// Throws (naming the account) when its public key PEM is not an RSA public key.
    init(account: FCMSimulatedAccount) throws {
        self.account = account
        do {
            key = try RSAPublicKey(pem: account.publicKeyPEM)
        } catch {
            throw TLSError(.configuration, "FCM simulator account \(account.clientEmail): \(error)")
        }
    }

    func verifies(signature: [UInt8], over data: [UInt8]) -> Bool {
        key.verifyRS256(signature: signature, data: data)
    }
}
