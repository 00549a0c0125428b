-- delete_model looks for the analyses and correction sessions that work with the model
-- (NOT EXISTS on both tables) before it deletes one.
CREATE INDEX analyses_model ON analyses(model_id, status);
CREATE INDEX sessions_model ON sessions(model_id, status);
