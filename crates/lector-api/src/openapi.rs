//! The served OpenAPI 3.1 document: the routes' own annotations, plus what holds for every
//! operation (bearer security unless public, problem+json error answers), added in one place.

use crate::error::{Problem, ProblemField};
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi, RefOr, ResponseBuilder};
use utoipa::{PartialSchema, ToSchema};

/// Operations that need no bearer token (API.md).
pub const PUBLIC_OPERATIONS: &[&str] = &[
    "register",
    "login",
    "accept_invitation",
    "reset_password",
    "send_password_reset_email",
    "health",
    "info",
    "openapi",
    "webhook_production",
    "webhook_test",
];

/// The content type a route's annotation names for a table download (`?format=`); the document
/// lists the formats it stands for instead, as the server answers them.
pub const TABLE_DOWNLOAD: &str = "application/vnd.lector.table";

/// What a table download answers, by format.
const TABLE_FORMATS: [&str; 4] = [
    "text/csv",
    "application/json",
    "application/x-ndjson",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
];

/// Completes the document collected from the routes.
pub fn finish(mut api: OpenApi) -> OpenApi {
    api.info.title = "Lector".into();
    api.info.version = env!("CARGO_PKG_VERSION").into();
    api.info.description = Some(
        "Self-hosted document intelligence: label text, train classifiers, analyse documents and \
         extract fields. Errors are application/problem+json (RFC 9457) with a stable `code`."
            .into(),
    );
    api.info.contact = None;
    api.info.license = Some(utoipa::openapi::License::new("Apache-2.0"));
    let components = api.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "bearer",
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .bearer_format("JWT or lk_ product key")
                .build(),
        ),
    );
    let mut schemas = vec![(Problem::name().into_owned(), Problem::schema())];
    <Problem as ToSchema>::schemas(&mut schemas);
    schemas.push((ProblemField::name().into_owned(), ProblemField::schema()));
    for (name, schema) in schemas {
        components.schemas.insert(name, schema);
    }
    let problem = ResponseBuilder::new()
        .description("The request was refused; see `code` and `detail`")
        .content(
            "application/problem+json",
            ContentBuilder::new()
                .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name("Problem"))))
                .build(),
        )
        .build();
    for item in api.paths.paths.values_mut() {
        for operation in operations(item) {
            let id = operation.operation_id.clone().unwrap_or_default();
            if !PUBLIC_OPERATIONS.contains(&id.as_str()) {
                operation.security = Some(vec![SecurityRequirement::new("bearer", Vec::<String>::new())]);
            }
            operation
                .responses
                .responses
                .insert("default".into(), RefOr::T(problem.clone()));
            list_table_formats(operation);
        }
    }
    api
}

/// Replaces the [`TABLE_DOWNLOAD`] marker of a download's answer with the formats it stands for.
fn list_table_formats(operation: &mut Operation) {
    for response in operation.responses.responses.values_mut() {
        let RefOr::T(response) = response else { continue };
        if response.content.shift_remove(TABLE_DOWNLOAD).is_some() {
            for format in TABLE_FORMATS {
                response
                    .content
                    .insert(format.into(), RefOr::T(ContentBuilder::new().build()));
            }
        }
    }
}

fn operations(item: &mut utoipa::openapi::PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.patch,
        &mut item.head,
        &mut item.options,
        &mut item.trace,
    ]
    .into_iter()
    .filter_map(Option::as_mut)
}
