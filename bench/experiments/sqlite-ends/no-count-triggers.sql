-- Written for schema v15 (bench/RESULTS.md, Session 44); v16 dropped events_outcome.
-- What the state and campaign count triggers cost the dispatcher's end.
-- (a bound, not a design: counts or read paths are wrong without it). bench/sqlite-ends.sh measures it.
DROP TRIGGER messages_count_update; DROP TRIGGER campaign_funnel_update;
