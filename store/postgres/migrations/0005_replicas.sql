-- Placeholder: another engineer writes this migration (replicas).
SELECT 1;
