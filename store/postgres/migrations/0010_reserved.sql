-- A placeholder of this branch alone: version 10 belongs to another
-- change merged beside this one, which replaces this file.
SELECT 1;
