-- Written for schema v15 (bench/RESULTS.md, Session 44); v16 (Session 45: events_outcome, dropped by v16, no longer named).
-- What every trigger on the end's path costs.
-- (a bound, not a design: counts or read paths are wrong without it). bench/sqlite-ends.sh measures it.
DROP TRIGGER messages_count_update; DROP TRIGGER campaign_funnel_update; DROP TRIGGER events_message_state; DROP TRIGGER messages_funnel_update; DROP TRIGGER events_message_opened; DROP TRIGGER events_message_deferred;
