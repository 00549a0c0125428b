-- The data rows an upload's preview counted, reading the file whole with its first row as the
-- header. An import that reads that row as data (`header_first` false) gets one more; knowing
-- the count, the request is refused at once when that is past the row limit, instead of the
-- job failing on the file's last row. Uploads previewed before this step have none.
ALTER TABLE uploads ADD COLUMN data_rows BIGINT;
