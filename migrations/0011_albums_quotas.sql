CREATE TABLE `album_uploads` (
	`album_id` text NOT NULL,
	`upload_id` text NOT NULL,
	`position` integer NOT NULL,
	`added_at` integer NOT NULL,
	PRIMARY KEY(`album_id`, `upload_id`),
	FOREIGN KEY (`album_id`) REFERENCES `albums`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`upload_id`) REFERENCES `uploads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `album_uploads_order` ON `album_uploads` (`album_id`,`position`);--> statement-breakpoint
CREATE INDEX `album_uploads_upload` ON `album_uploads` (`upload_id`);--> statement-breakpoint
CREATE TABLE `albums` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`title` text,
	`description` text,
	`visibility` text DEFAULT 'unlisted' NOT NULL,
	`password_hash` text,
	`cover_upload_id` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`cover_upload_id`) REFERENCES `uploads`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `albums_account_created` ON `albums` (`account_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `albums_visibility_created` ON `albums` (`visibility`,`created_at`);--> statement-breakpoint
ALTER TABLE `accounts` ADD `quota_bytes` integer;--> statement-breakpoint
ALTER TABLE `accounts` ADD `quota_uploads` integer;--> statement-breakpoint
ALTER TABLE `accounts` ADD `bytes_used` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `accounts` ADD `uploads_used` integer DEFAULT 0 NOT NULL;