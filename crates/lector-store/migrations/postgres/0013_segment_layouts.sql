-- A segment read from a PDF or image file is one page: its words with their boxes, as JSON
-- (lector_extract::Page). NULL for segments of text.
ALTER TABLE segments ADD COLUMN layout TEXT;
