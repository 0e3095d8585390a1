ALTER TABLE `chunk_pieces` ADD `object_key` text;--> statement-breakpoint
ALTER TABLE `tus_uploads` ADD `tail` text DEFAULT '[]' NOT NULL;