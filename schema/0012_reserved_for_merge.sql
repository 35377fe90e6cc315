-- Vigil catalog, migration 0012: a placeholder on branch wt-drain only. Number 0012 belongs to
-- another branch; migrations must be numbered without holes, so this empty one lets 0013 build
-- here. Delete this file when merging (the other branch's 0012 takes its place).
SELECT 1;
