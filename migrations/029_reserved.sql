-- Reserved. The migrator requires migration numbers without a gap, and
-- number 029 is kept for a migration written apart from 030 (NOTIFYs from
-- the statements that queue work); that migration replaces this file.
SELECT 1;

---- create above / drop below ----
