//! Checks on user-supplied values that do not depend on storage.

use crate::FieldError;

pub const MIN_PASSWORD_CHARS: usize = 8;
pub const MAX_PASSWORD_CHARS: usize = 1024;
pub const MAX_EMAIL_CHARS: usize = 254;
pub const MAX_NAME_CHARS: usize = 120;
pub const MAX_DESCRIPTION_CHARS: usize = 2000;

/// Collects field problems so a request reports all of them at once.
#[derive(Debug, Default)]
pub struct Problems(pub Vec<FieldError>);

impl Problems {
    pub fn push(&mut self, field: &str, message: impl Into<String>) {
        self.0.push(FieldError::new(field, message));
    }

    pub fn check(&mut self, ok: bool, field: &str, message: &str) {
        if !ok {
            self.push(field, message);
        }
    }

    pub fn email(&mut self, field: &str, value: &str) {
        self.check(is_email(value), field, "must be an e-mail address");
    }

    pub fn password(&mut self, field: &str, value: &str) {
        let n = value.chars().count();
        if n < MIN_PASSWORD_CHARS {
            self.push(field, format!("must have at least {MIN_PASSWORD_CHARS} characters"));
        } else if n > MAX_PASSWORD_CHARS {
            self.push(field, format!("must have at most {MAX_PASSWORD_CHARS} characters"));
        }
    }

    /// A required, trimmed, non-empty text of bounded length.
    pub fn name(&mut self, field: &str, value: &str, max_chars: usize) {
        if value.trim().is_empty() {
            self.push(field, "must not be empty");
        } else {
            self.max_len(field, value, max_chars);
        }
    }

    pub fn max_len(&mut self, field: &str, value: &str, max_chars: usize) {
        if value.chars().count() > max_chars {
            self.push(field, format!("must have at most {max_chars} characters"));
        }
    }

    /// `Ok` when nothing was found, else a 422 error listing every problem.
    pub fn finish(self) -> crate::Result<()> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(crate::Error::validation(self.0))
        }
    }
}

/// A pragmatic e-mail check: one `@`, a non-empty local part, a dotted domain, no spaces.
pub fn is_email(value: &str) -> bool {
    if value.len() > MAX_EMAIL_CHARS || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    let Some((local, domain)) = value.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains("..")
}

/// E-mail addresses compare case-insensitively; they are stored in this form.
pub fn normalize_email(value: &str) -> String {
    value.trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails() {
        for ok in ["a@b.co", "first.last+tag@example.org"] {
            assert!(is_email(ok), "{ok}");
        }
        for bad in ["", "a", "a@b", "@b.co", "a@@b.co", "a b@c.de", "a@.b.co", "a@b..co"] {
            assert!(!is_email(bad), "{bad}");
        }
    }

    #[test]
    fn problems_collect_every_field() {
        let mut p = Problems::default();
        p.password("password", "short");
        p.email("email", "nope");
        p.name("name", "  ", 10);
        let err = p.finish().unwrap_err();
        assert_eq!(err.errors.len(), 3);
        assert_eq!(err.status(), 422);
    }
}
