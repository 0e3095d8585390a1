CREATE TABLE `video_seconds` (
	`account_id` text NOT NULL,
	`day` integer NOT NULL,
	`seconds` real DEFAULT 0 NOT NULL,
	PRIMARY KEY(`account_id`, `day`)
);
--> statement-breakpoint
ALTER TABLE `media_jobs` ADD `phase` text DEFAULT 'file' NOT NULL;--> statement-breakpoint
ALTER TABLE `uploads` ADD `duration` real;--> statement-breakpoint
ALTER TABLE `uploads` ADD `ladder` text;