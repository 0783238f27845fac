import APNsProvider
import FCMProvider
public import HeraldService
public import PushProviders

extension APNsGateway {
    /// The dispatcher's providers over this gateway and its FCM gateway, as
    /// `HeraldServer` registers them.
    public var providers: ProviderRegistry {
        ProviderRegistry().registering(APNsPushProvider(routing: self)).registering(FCMPushProvider(routing: fcm))
    }
}
