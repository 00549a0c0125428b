-- What a LABEL model learnt of its fields from annotated pages (lector_extract::learned, JSON);
-- NULL for models of text.
ALTER TABLE models ADD COLUMN field_model TEXT;
-- The pages a reviewed extraction read (JSON, lector_extract::Page), so corrected values can
-- train the next version; NULL when the document was too large to keep.
ALTER TABLE hitl_reviews ADD COLUMN pages TEXT;
