CREATE TABLE `chunk_pieces` (
	`session_id` text NOT NULL,
	`index` integer NOT NULL,
	`size` integer NOT NULL,
	PRIMARY KEY(`session_id`, `index`),
	FOREIGN KEY (`session_id`) REFERENCES `chunk_sessions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `chunk_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`total` integer NOT NULL,
	`status` text DEFAULT 'open' NOT NULL,
	`lease_until` integer,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `chunk_sessions_status_expires` ON `chunk_sessions` (`status`,`expires_at`);