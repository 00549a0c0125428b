-- The three foreign keys an import writes for every row (documents -> projects,
-- documents -> document_groups, segments -> documents) are checked once per statement over all
-- of its rows instead of once per row. PostgreSQL runs a query of its own for each row a
-- foreign key checks; for an import that was more than half of the database's work
-- (docs/BENCHMARKS.md, "Ingest through the API"). The triggers below keep what the keys
-- promised: an inserted or updated row must name parents that exist, which are locked
-- FOR KEY SHARE as the keys locked them, so a parent cannot be deleted under a writer; and
-- deleting a parent deletes (or, for a group, releases) its children, as ON DELETE did.
-- SQLite keeps its foreign keys: it checks them inside the process, for little cost.

ALTER TABLE documents DROP CONSTRAINT documents_project_id_fkey;
ALTER TABLE documents DROP CONSTRAINT documents_group_id_fkey;
ALTER TABLE segments DROP CONSTRAINT segments_document_id_fkey;

-- Raises the error a foreign key raises: `child` names a row of `parent` that does not exist.
CREATE FUNCTION lector_missing_parent(child TEXT, parent TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'insert or update on table "%" names a row of "%" that does not exist', child, parent
        USING ERRCODE = 'foreign_key_violation';
END $$;

-- Each check counts the distinct parents the statement's rows name and the rows of the parent
-- table it can lock among them; fewer locked than named means one is missing.
CREATE FUNCTION lector_documents_have_parents() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    projects_named BIGINT[] := ARRAY(SELECT DISTINCT project_id FROM new_documents);
    groups_named BIGINT[] := ARRAY(SELECT DISTINCT group_id FROM new_documents WHERE group_id IS NOT NULL);
BEGIN
    IF (SELECT count(*) FROM (SELECT 1 FROM projects WHERE id = ANY(projects_named) FOR KEY SHARE) AS locked)
        <> cardinality(projects_named) THEN
        PERFORM lector_missing_parent('documents', 'projects');
    END IF;
    IF cardinality(groups_named) > 0
        AND (SELECT count(*) FROM (SELECT 1 FROM document_groups WHERE id = ANY(groups_named) FOR KEY SHARE) AS locked)
            <> cardinality(groups_named) THEN
        PERFORM lector_missing_parent('documents', 'document_groups');
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER documents_have_parents_on_insert AFTER INSERT ON documents
    REFERENCING NEW TABLE AS new_documents FOR EACH STATEMENT EXECUTE FUNCTION lector_documents_have_parents();
CREATE TRIGGER documents_have_parents_on_update AFTER UPDATE ON documents
    REFERENCING NEW TABLE AS new_documents FOR EACH STATEMENT EXECUTE FUNCTION lector_documents_have_parents();

CREATE FUNCTION lector_segments_have_documents() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    documents_named BIGINT[] := ARRAY(SELECT DISTINCT document_id FROM new_segments);
BEGIN
    IF (SELECT count(*) FROM (SELECT 1 FROM documents WHERE id = ANY(documents_named) FOR KEY SHARE) AS locked)
        <> cardinality(documents_named) THEN
        PERFORM lector_missing_parent('segments', 'documents');
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER segments_have_documents_on_insert AFTER INSERT ON segments
    REFERENCING NEW TABLE AS new_segments FOR EACH STATEMENT EXECUTE FUNCTION lector_segments_have_documents();
CREATE TRIGGER segments_have_documents_on_update AFTER UPDATE ON segments
    REFERENCING NEW TABLE AS new_segments FOR EACH STATEMENT EXECUTE FUNCTION lector_segments_have_documents();

-- ON DELETE CASCADE from projects to their documents.
CREATE FUNCTION lector_projects_take_documents() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM documents WHERE project_id IN (SELECT id FROM old_projects);
    RETURN NULL;
END $$;
CREATE TRIGGER projects_take_documents AFTER DELETE ON projects
    REFERENCING OLD TABLE AS old_projects FOR EACH STATEMENT EXECUTE FUNCTION lector_projects_take_documents();

-- ON DELETE SET NULL from groups to their documents. A group deleted with its project (by the
-- projects' own keys) leaves its documents to the trigger above, which deletes them.
CREATE FUNCTION lector_groups_release_documents() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE documents SET group_id = NULL
    WHERE group_id IN (SELECT id FROM old_groups)
      AND EXISTS (SELECT 1 FROM projects WHERE projects.id = documents.project_id);
    RETURN NULL;
END $$;
CREATE TRIGGER groups_release_documents AFTER DELETE ON document_groups
    REFERENCING OLD TABLE AS old_groups FOR EACH STATEMENT EXECUTE FUNCTION lector_groups_release_documents();

-- ON DELETE CASCADE from documents to their segments.
CREATE FUNCTION lector_documents_take_segments() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM segments WHERE document_id IN (SELECT id FROM old_documents);
    RETURN NULL;
END $$;
CREATE TRIGGER documents_take_segments AFTER DELETE ON documents
    REFERENCING OLD TABLE AS old_documents FOR EACH STATEMENT EXECUTE FUNCTION lector_documents_take_segments();
