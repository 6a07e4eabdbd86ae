-- Placeholder: this version is reserved for a migration of another
-- branch. It changes nothing; the real migration replaces it.
SELECT 1;
