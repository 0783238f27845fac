/// Version 8: the provider's id of an accepted push is a provider message
/// id (issue 25, SPEC §3): `apns_id` held FCM message names too, so the
/// column of `messages` and of `outcomes` is renamed `provider_message_id`,
/// every stored value kept.
enum SchemaV8 {
    static let sql = """
        ALTER TABLE messages RENAME COLUMN apns_id TO provider_message_id;
        ALTER TABLE outcomes RENAME COLUMN apns_id TO provider_message_id;
        """
}
