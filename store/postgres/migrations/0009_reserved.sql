-- A placeholder of this branch alone: version 9 belongs to another
-- change merged beside this one, which replaces this file.
SELECT 1;
