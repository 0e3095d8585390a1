CREATE TABLE `tus_uploads` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`length` integer,
	`offset` integer DEFAULT 0 NOT NULL,
	`metadata` text,
	`fields` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`writer` text,
	`writer_until` integer,
	`ended` text,
	`upload_id` text,
	`failure` text,
	FOREIGN KEY (`id`) REFERENCES `chunk_sessions`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `tus_uploads_expires` ON `tus_uploads` (`ended`,`expires_at`);--> statement-breakpoint
ALTER TABLE `chunk_sessions` ADD `sender` text DEFAULT 'chunk' NOT NULL;