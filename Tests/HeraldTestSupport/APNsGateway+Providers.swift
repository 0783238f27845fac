public import APNsProvider
import FCMProvider
public import PushProviders

extension APNsGateway {
    /// The dispatcher's providers over this gateway (iOS) and an FCM
    /// gateway with no route (Android), as `HeraldServer` registers them.
    public var providers: ProviderRegistry {
        ProviderRegistry().registering(APNsPushProvider(routing: self)).registering(FCMPushProvider(routing: FCMGateway(routes: [])))
    }
}
