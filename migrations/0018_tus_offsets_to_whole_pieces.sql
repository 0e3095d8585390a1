-- Unfinished tus uploads resume from their last whole piece (5 MiB, PIECE_BYTES): before 0016
-- the bytes past it were kept under keys the code no longer reads, and 0016 gave these rows an
-- empty tail. Clients ask for the offset (HEAD) and send those bytes again.
UPDATE `tus_uploads` SET `offset` = `offset` - (`offset` % 5242880), `tail` = '[]' WHERE `ended` IS NULL AND `offset` % 5242880 <> 0;--> statement-breakpoint
-- No password kept in Upload-Metadata as sent: its pair is taken out (the hash is in `fields`).
UPDATE `tus_uploads` SET `metadata` = nullif(trim(substr(',' || `metadata` || ',', 1, instr(',' || `metadata` || ',', ',password ')) || substr(substr(',' || `metadata` || ',', instr(',' || `metadata` || ',', ',password ') + 1), instr(substr(',' || `metadata` || ',', instr(',' || `metadata` || ',', ',password ') + 1), ',') + 1), ','), '') WHERE instr(',' || `metadata` || ',', ',password ') > 0;--> statement-breakpoint
UPDATE `tus_uploads` SET `metadata` = nullif(trim(replace(',' || `metadata` || ',', ',password,', ','), ','), '') WHERE instr(',' || `metadata` || ',', ',password,') > 0;
