-- Written for schema v15 (bench/RESULTS.md, Session 44); v16 dropped events_outcome.
-- What events_bundle (StreamEvents' per-bundle index) costs per event.
-- (a bound, not a design: counts or read paths are wrong without it). bench/sqlite-ends.sh measures it.
DROP INDEX events_bundle;
