-- Placeholder: the tables of this domain are being written.
SELECT 1;
