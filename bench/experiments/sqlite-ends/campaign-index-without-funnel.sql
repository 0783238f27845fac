-- Written for schema v15 (bench/RESULTS.md, Session 44); v16 dropped events_outcome.
-- What keeping funnel in messages_campaign costs (the dated CampaignReport's covering scan needs it).
-- (a bound, not a design: counts or read paths are wrong without it). bench/sqlite-ends.sh measures it.
DROP INDEX messages_campaign; CREATE INDEX messages_campaign ON messages(bundle_id, campaign_id, delivery_method, ab_test, created_at);
