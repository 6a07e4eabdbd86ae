-- A project's branding of its hosted pages (projects.go): the name they
-- show, the address of its logo and its accent colour; '' for each
-- means none (the project's name, no logo, the built-in colour).
ALTER TABLE projects ADD COLUMN display_name text NOT NULL DEFAULT '',
	ADD COLUMN logo_url text NOT NULL DEFAULT '',
	ADD COLUMN accent_color text NOT NULL DEFAULT '';
