-- Written for schema v15 (bench/RESULTS.md, Session 44); v16 dropped events_outcome.
-- The four triggers on the end's path behind a flag (writer_flags.skip), and a scratch
-- column for the old funnel: with experiments/sqlite-ends/writer-counts.py, the writer keeping
-- counts and events itself; alone (flag 0), what the flag's check costs every other path.
CREATE TABLE writer_flags(k INTEGER PRIMARY KEY CHECK (k = 0), skip INTEGER NOT NULL); INSERT INTO writer_flags VALUES (0, 0);
DROP TRIGGER messages_count_update;
CREATE TRIGGER messages_count_update AFTER UPDATE OF state ON messages
    WHEN ( OLD.state <> NEW.state) AND (SELECT skip FROM writer_flags) = 0 BEGIN
    UPDATE state_counts SET n = n - 1 WHERE state = OLD.state;
    INSERT INTO state_counts(state, n) VALUES (NEW.state, 1)
        ON CONFLICT(state) DO UPDATE SET n = n + 1;
END;
DROP TRIGGER campaign_funnel_update;
CREATE TRIGGER campaign_funnel_update
    AFTER UPDATE OF bundle_id, campaign_id, delivery_method, ab_test, funnel, deferred_at, state ON messages
    WHEN ( OLD.funnel IS NOT NEW.funnel OR ((OLD.deferred_at IS NOT NULL) + 2 * (OLD.state = 'suppressed')) IS NOT ((NEW.deferred_at IS NOT NULL) + 2 * (NEW.state = 'suppressed'))
      OR OLD.campaign_id IS NOT NEW.campaign_id OR OLD.delivery_method IS NOT NEW.delivery_method
      OR OLD.ab_test IS NOT NEW.ab_test OR OLD.bundle_id IS NOT NEW.bundle_id) AND (SELECT skip FROM writer_flags) = 0 BEGIN
    UPDATE campaign_funnel SET n = n - 1
    WHERE bundle_id = OLD.bundle_id AND campaign_id = OLD.campaign_id AND delivery_method = OLD.delivery_method
      AND ab_test = OLD.ab_test AND funnel = OLD.funnel AND policy = ((OLD.deferred_at IS NOT NULL) + 2 * (OLD.state = 'suppressed'));
    INSERT INTO campaign_funnel(bundle_id, campaign_id, delivery_method, ab_test, funnel, policy, n)
    VALUES (NEW.bundle_id, NEW.campaign_id, NEW.delivery_method, NEW.ab_test, NEW.funnel, ((NEW.deferred_at IS NOT NULL) + 2 * (NEW.state = 'suppressed')), 1) ON CONFLICT DO UPDATE SET n = n + 1;
END;
DROP TRIGGER events_message_state;
CREATE TRIGGER events_message_state AFTER UPDATE OF state ON messages
    WHEN ( OLD.state <> NEW.state) AND (SELECT skip FROM writer_flags) = 0 BEGIN
    INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform)
    VALUES (NEW.bundle_id, NEW.updated_at, NEW.state, NEW.id, NEW.idempotency_key, NEW.user_id,
            NEW.campaign_id, NEW.platform);
END;
DROP TRIGGER events_outcome;
CREATE TRIGGER events_outcome AFTER INSERT ON outcomes WHEN (SELECT skip FROM writer_flags) = 0 BEGIN
    INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform,
                       device_token, reason, http_status)
    SELECT m.bundle_id, NEW.at, CASE NEW.status WHEN 'sent' THEN 'sent' WHEN 'handed_off' THEN 'handed_off' WHEN 'unconfirmed' THEN 'unconfirmed' WHEN 'displayed' THEN 'displayed' WHEN 'opened' THEN 'opened' WHEN 'waiting' THEN 'deferred' WHEN 'suppressed' THEN 'suppressed' WHEN 'revoked' THEN 'revoked' WHEN 'expired' THEN 'expired' ELSE 'failed' END, m.id, m.idempotency_key, m.user_id,
           m.campaign_id, m.platform, NEW.device_token, CASE WHEN NEW.status = 'revoke_failed' THEN 'revoke_failed: ' || coalesce(NEW.reason, '') WHEN NEW.status IN ('unregistered', 'bad_device_token') THEN coalesce(NEW.reason, NEW.status) ELSE NEW.reason END, NEW.http_status
    FROM messages m WHERE m.id = NEW.message_id;
END;ALTER TABLE messages ADD COLUMN prior_funnel INTEGER;
