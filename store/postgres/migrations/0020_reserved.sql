-- Reserved: version 20 is another branch's migration. This file only
-- keeps the versions of this branch without a gap; it is dropped when
-- the branches are merged.
SELECT 1;
