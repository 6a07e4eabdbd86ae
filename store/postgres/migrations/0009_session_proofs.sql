-- How each session was proven (store.Session.Proofs): its methods in the
-- order first proven, and when each was last proven (Unix nanoseconds,
-- 0 for the zero time), side by side. Both are NULL for a session stored
-- before them: it reads from method, issued_at and stepped_up_at
-- (store.LegacyProofs). stepped_up_at is no longer written (NULL).
-- Adding columns without a default rewrites no row.
ALTER TABLE sessions
	ADD COLUMN proof_methods text[],
	ADD COLUMN proof_times   bigint[];
