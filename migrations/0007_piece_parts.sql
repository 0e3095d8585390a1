ALTER TABLE `chunk_pieces` ADD `part_number` integer;--> statement-breakpoint
ALTER TABLE `chunk_pieces` ADD `part_etag` text;--> statement-breakpoint
ALTER TABLE `chunk_pieces` ADD `object_offset` integer;--> statement-breakpoint
ALTER TABLE `chunk_sessions` ADD `file_upload_id` text;--> statement-breakpoint
ALTER TABLE `chunk_sessions` ADD `object_key` text;--> statement-breakpoint
ALTER TABLE `chunk_sessions` ADD `multipart_id` text;--> statement-breakpoint
ALTER TABLE `chunk_sessions` ADD `parts_begun` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `chunk_sessions` ADD `assembled` integer DEFAULT false NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `chunk_sessions_file_upload` ON `chunk_sessions` (`file_upload_id`);