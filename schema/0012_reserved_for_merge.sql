-- Vigil catalog, migration 0012: a placeholder on branch wt-drain only. Number 0012 belongs to
-- another branch; migrations must be numbered without holes, so this one, which changes nothing
-- (the column's default is 0 already), lets 0013 build here. Delete this file when merging: the
-- other branch's 0012 takes its place.
ALTER TABLE nodes ALTER COLUMN headroom_bps SET DEFAULT 0;
