CREATE TABLE `blocked_terms` (
	`normalized` text PRIMARY KEY NOT NULL,
	`term` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `flagged_content` (
	`content_hash` text PRIMARY KEY NOT NULL,
	`upload_id` text NOT NULL,
	`reason` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `uploads_content_hash` ON `uploads` (`content_hash`);