-- Placeholder for migration 0009, which another branch adds; it keeps
-- the versions without a gap until that branch is merged, and goes
-- away then.
SELECT 1;
