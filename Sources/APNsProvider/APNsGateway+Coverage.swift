public import HeraldCore

extension APNsGateway {
    /// The device environments some route serves for `bundleID`; empty when
    /// no route could ever deliver to it.
    public func environments(serving bundleID: String) -> Set<APNsEnvironment> {
        Set(APNsEnvironment.allCases.filter { environment in
            routes.contains { $0.serves(bundleID: bundleID, environment: environment) }
        })
    }
}
