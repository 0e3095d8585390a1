ALTER TABLE `uploads` ADD `password_hash` text;--> statement-breakpoint
ALTER TABLE `uploads` ADD `max_views` integer;--> statement-breakpoint
ALTER TABLE `uploads` ADD `views` integer DEFAULT 0 NOT NULL;