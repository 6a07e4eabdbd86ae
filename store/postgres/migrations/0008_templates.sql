-- Mail templates (templates.go): a project's own
-- wording of a kind of mail in a locale. The primary key's prefix is
-- the project (Templates, DeleteProject).
CREATE TABLE mail_templates (
	project_id text COLLATE "C" NOT NULL,
	kind       text COLLATE "C" NOT NULL,
	locale     text COLLATE "C" NOT NULL,
	subject    text NOT NULL,
	body_text  text NOT NULL,
	body_html  text NOT NULL,
	updated_at bigint,
	PRIMARY KEY (project_id, kind, locale)
);
