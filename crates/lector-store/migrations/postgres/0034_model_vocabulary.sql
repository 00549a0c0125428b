-- Which of its project's classes and labels a trained model learnt each of its names from, by
-- id: a class or label renamed after the training still takes the model's tags (an analysis
-- or correction matched names alone, so the renamed class's tags lost their class). A model
-- without rows here (uploaded, or trained before this step) is matched by name, as before.
CREATE TABLE model_classes (
    model_id BIGINT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    class_id BIGINT REFERENCES classes(id) ON DELETE SET NULL,
    PRIMARY KEY (model_id, name)
);
CREATE INDEX model_classes_class ON model_classes(class_id);
CREATE TABLE model_labels (
    model_id BIGINT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    label_id BIGINT REFERENCES labels(id) ON DELETE SET NULL,
    PRIMARY KEY (model_id, name)
);
CREATE INDEX model_labels_label ON model_labels(label_id);

-- What a correction session's model predicted, by the class and label it matched then (beside
-- the names), so its agreement with the corrections survives a rename.
ALTER TABLE correction_predictions ADD COLUMN class_id BIGINT REFERENCES classes(id) ON DELETE SET NULL;
ALTER TABLE correction_predictions ADD COLUMN label_id BIGINT REFERENCES labels(id) ON DELETE SET NULL;
CREATE INDEX correction_predictions_class ON correction_predictions(class_id);
CREATE INDEX correction_predictions_label ON correction_predictions(label_id);

-- How many segments a model learnt from (its artifact's count), which a correction session's
-- predicted score weighs the corrections against, without loading the model (a listing of
-- correction sessions loaded every one of their models). NULL: read it from the artifact.
ALTER TABLE models ADD COLUMN examples BIGINT;

-- The sentence encoder (BASE model) a model reads texts with, recorded when its training
-- starts: a warm start keeps its base's encoder, and the chain of bases leading to it breaks
-- when a model in it is deleted (base_id is SET NULL), so the language checks read this first.
-- NULL: found along base_id, as before.
ALTER TABLE models ADD COLUMN encoder_id BIGINT REFERENCES models(id) ON DELETE SET NULL;
CREATE INDEX models_encoder ON models(encoder_id);

-- Whose personal workspace a workspace is, served with every workspace (`owner_id`): found
-- by the owner's row, which nothing indexed.
CREATE INDEX users_personal_workspace ON users(personal_workspace_id);

-- The models and predictions written before this step: their names as the project's classes
-- and labels bear them now (a class renamed before the upgrade stays unmatched, as it was).
INSERT INTO model_classes (model_id, name, class_id)
SELECT m.id, c.name, c.id FROM models m JOIN classes c ON c.project_id = m.project_id
WHERE m.type <> 'BASE' AND c.name IN (SELECT json_array_elements_text(m.classes::json))
ON CONFLICT DO NOTHING;
INSERT INTO model_labels (model_id, name, label_id)
SELECT m.id, l.name, l.id FROM models m JOIN labels l ON l.project_id = m.project_id
WHERE m.type <> 'BASE' AND l.name IN (SELECT json_array_elements_text(m.labels::json))
ON CONFLICT DO NOTHING;
UPDATE correction_predictions SET class_id = (
    SELECT c.id FROM classes c JOIN sessions s ON s.project_id = c.project_id
    WHERE s.id = correction_predictions.session_id AND c.name = correction_predictions.class_name
) WHERE class_name IS NOT NULL;
UPDATE correction_predictions SET label_id = (
    SELECT l.id FROM labels l JOIN sessions s ON s.project_id = l.project_id
    WHERE s.id = correction_predictions.session_id AND l.name = correction_predictions.label_name
) WHERE label_name IS NOT NULL;
