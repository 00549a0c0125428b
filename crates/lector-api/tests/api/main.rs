//! The API's integration tests, one binary: each module boots the real server over HTTPS on a
//! fresh database of either backend ([`common::TestApp`]) and talks to it as a client does.
//! One binary rather than one per file: every test file linked the whole service again, which
//! cost minutes and gigabytes of disk on two cores.

#[macro_use]
mod common;

mod absa_story;
mod analyses;
mod auth;
mod base_models;
mod blobs_s3;
mod body_limits;
mod certificates;
mod corrections;
mod credentials;
mod deletes;
mod document_files;
mod documents;
mod extraction;
mod extraction_limits;
mod extraction_reviews;
mod files;
mod hitls;
mod hostile;
mod http2_bodies;
mod jobs;
mod jwt;
mod labeled_files;
mod limits;
mod matrix;
mod minilm_story;
mod models;
mod names;
mod notifications;
mod openapi;
mod projects;
mod protocol;
mod sessions;
mod system;
mod type_stories;
mod web_app;
mod workflows;
mod workspaces;
