-- Written for schema v15 (bench/RESULTS.md, Session 44); v16 dropped events_outcome.
-- What every trigger on the end's path costs.
-- (a bound, not a design: counts or read paths are wrong without it). bench/sqlite-ends.sh measures it.
DROP TRIGGER messages_count_update; DROP TRIGGER campaign_funnel_update; DROP TRIGGER events_message_state; DROP TRIGGER events_outcome; DROP TRIGGER messages_funnel_update; DROP TRIGGER events_message_opened; DROP TRIGGER events_message_deferred;
