//! Accounts and invitations as the service's rules, apart from HTTP: an account created (by
//! registering, by a superuser, from the command line), a password reset asked for and done,
//! a workspace created within its creator's hourly limit, people invited, invitations mailed
//! again and accepted. The route files parse a request, call
//! one function here and answer; the command line calls the same functions. The mails' texts
//! are here as well, so a reader sees what a person receives and why.

use crate::auth::{random_token, token_hash};
use crate::state::AppState;
use lector_core::time::Timestamp;
use lector_core::validate::{is_email, normalize_email};
use lector_core::{Action, Error, ErrorCode, FieldError, Result, Role, Scope};
use lector_store::{
    Invitation, Invitee, MailPayload, NewUser, PasswordResetMail, TokenPurpose, User, Workspace, WorkspaceRef,
};

/// What an account is made of; the e-mail is normalised and the names trimmed here.
#[derive(Debug, Clone)]
pub struct NewAccount {
    pub email: String,
    pub first_name: String,
    pub last_name: String,
    /// Without one, the account gets a first-time-login token instead.
    pub password: Option<String>,
    pub is_superuser: bool,
}

/// Creates a user; without a password, also a first-time-login token, which is returned (for
/// the command line, or for [`mail_first_login`]) and never served over HTTP.
pub async fn create_account(state: &AppState, account: NewAccount) -> Result<(User, Option<String>)> {
    let password_hash = match &account.password {
        Some(password) => Some(state.auth.hash_password(password).await?),
        None => None,
    };
    let user = state
        .store
        .create_user(NewUser {
            email: normalize_email(&account.email),
            first_name: account.first_name.trim().to_owned(),
            last_name: account.last_name.trim().to_owned(),
            password_hash,
            is_superuser: account.is_superuser,
        })
        .await?;
    if account.password.is_some() {
        return Ok((user, None));
    }
    let token = random_token();
    let expires = Timestamp::now().plus_seconds(state.config.invitation_lifetime_secs);
    state
        .store
        .create_one_time_token(user.id, TokenPurpose::FirstLogin, &token_hash(&token), expires)
        .await?;
    Ok((user, Some(token)))
}

/// Mails a new account's first-time-login token, sent on behalf of `by`.
pub async fn mail_first_login(state: &AppState, by: &User, user: &User, token: &str) -> Result<()> {
    let text = format!(
        "An account was created for you on Lector.\n\n\
         Token: {token}\n\n\
         Log in once by POSTing {{\"token\": \"<token>\"}} to\n\
         {}/auth/login, then set a password with PUT /users/{}.\n",
        state.config.public_url(),
        user.id
    );
    let mail = MailPayload {
        to: user.email.clone(),
        subject: "Your Lector account".into(),
        advice: "ask the user to reset the password with their address".into(),
    };
    state.store.queue_mail(&mail, &text, Some(by.id)).await?;
    Ok(())
}

/// Queues a password-reset mail to `email`, which a job sends only if the address belongs to
/// an active account. The request does the same work whatever the address (makes a token,
/// queues one job), so neither its answer nor its time says whether the address is registered.
/// An address gets a few an hour from one client, and a few more from all (429 past either),
/// counted under its digest for every address alike: many clients cannot flood an inbox, and one
/// client cannot keep its owner from a mail. `client` is the caller's rate-limit key.
pub async fn request_password_reset(state: &AppState, email: &str, client: &str) -> Result<()> {
    let email = normalize_email(email);
    if !is_email(&email) {
        return Ok(());
    }
    let limits = state.config.rate_limits;
    let to = format!("reset-mail:to:{}", token_hash(&email));
    let store = &state.store;
    store
        .hit_rate_limit(
            &format!("{to}:from:{client}"),
            limits.reset_mails_per_recipient_and_client_per_hour,
            3600,
        )
        .await?;
    store
        .hit_rate_limit(&to, limits.reset_mails_per_recipient_per_hour, 3600)
        .await?;
    let token = random_token();
    let lifetime = state.config.reset_token_lifetime_secs;
    let text = format!(
        "Someone asked to reset the password of your Lector account.\n\n\
         Token: {token}\n\n\
         To set a new password, open {public}/app/reset-password?token={token}\n\
         or POST to {public}/password/reset the JSON fields reset_password_token and password.\n\
         The token works once and expires in {} minutes. A reset signs out every session\n\
         and deletes the account's product keys.\n\
         If you did not ask, ignore this mail.\n",
        lifetime / 60,
        public = state.config.public_url(),
    );
    let mail = PasswordResetMail {
        token_hash: token_hash(&token),
        expires: Timestamp::now().plus_seconds(lifetime).micros(),
        subject: "Reset your Lector password".into(),
        text,
    };
    state.store.queue_password_reset(&email, &mail).await
}

/// Sets a new password with a reset token; every earlier access token stops working and the
/// account's product keys are deleted.
pub async fn reset_password(state: &AppState, token: &str, password: &str) -> Result<()> {
    // 422 naming the field, not 401: the caller is not the one refused (a client that signs in
    // again on 401 would misread it), the token in the body is.
    let unknown = || {
        Error::validation(vec![FieldError::new(
            "reset_password_token",
            "is unknown, used or expired; ask for a new reset mail",
        )])
    };
    let token_hash = token_hash(token);
    // Checked before the hash is made, used with the new password: a failure between them
    // (a busy database) leaves the mailed link working for another try.
    state
        .store
        .one_time_token_user(TokenPurpose::PasswordReset, &token_hash)
        .await?
        .ok_or_else(unknown)?;
    let hash = state.auth.hash_password(password).await?;
    state
        .store
        .reset_password(&token_hash, &hash)
        .await?
        .ok_or_else(unknown)?;
    Ok(())
}

/// An invitation being accepted: its token, and the account it is accepted with.
#[derive(Debug, Clone)]
pub struct Acceptance {
    pub token: String,
    /// A new account's password, or the existing account's.
    pub password: String,
    /// If given, must be the invited address.
    pub email: Option<String>,
    pub first_name: String,
    pub last_name: String,
}

/// Accepts an invitation: creates the account (or, for an existing one, checks its password)
/// and adds the membership. Answers the user and the workspace joined.
pub async fn accept_invitation(state: &AppState, acceptance: Acceptance) -> Result<(User, i64)> {
    let invitation = state
        .store
        .invitation_by_token(&token_hash(&acceptance.token))
        .await?
        .ok_or_else(|| Error::not_found("invitation (unknown, used, cancelled or expired)"))?;
    if let Some(email) = &acceptance.email
        && normalize_email(email) != invitation.email
    {
        return Err(Error::validation(vec![FieldError::new(
            "email",
            "is not the invited address",
        )]));
    }
    let invitee = match state.store.login_candidate(&invitation.email).await? {
        Some((user, hash)) => {
            if !state.auth.verify_password(&acceptance.password, hash.as_deref()).await {
                return Err(Error::new(
                    ErrorCode::InvalidCredentials,
                    "the password of the existing account is wrong",
                ));
            }
            Invitee::Existing(user.id)
        }
        None => Invitee::New(NewUser {
            email: invitation.email.clone(),
            first_name: acceptance.first_name.trim().to_owned(),
            last_name: acceptance.last_name.trim().to_owned(),
            password_hash: Some(state.auth.hash_password(&acceptance.password).await?),
            is_superuser: false,
        }),
    };
    let user = state.store.accept_invitation(&invitation, invitee).await?;
    Ok((user, invitation.workspace_id))
}

/// Who invites: the scope that decides, and the user the mails name.
#[derive(Debug, Clone, Copy)]
pub struct Inviter<'a> {
    pub scope: &'a Scope,
    pub user: &'a User,
}

/// What an invitation round made: the invitations, and the addresses not invited with why.
#[derive(Debug, Default)]
pub struct Invited {
    pub invitations: Vec<Invitation>,
    pub not_invited: Vec<(String, &'static str)>,
}

/// Why an address is not invited once the workspace has
/// [`lector_store::MAX_PENDING_INVITATIONS`].
const TOO_MANY_PENDING: &str =
    "the workspace has 1000 pending invitations, the most it may have: cancel some, or wait until they are accepted";

/// Creates a workspace with the caller of `scope` as its ADMIN, at most
/// `rate_limits.workspaces_per_hour` a user an hour (superusers aside; 429 past it). Only
/// workspaces made count: the count is read before and added to after a creation, so a taken
/// name or a full account costs nothing (creations at once may pass it by the caller's turns,
/// three on each API node).
pub async fn create_workspace(state: &AppState, scope: &Scope, name: &str, description: &str) -> Result<Workspace> {
    let limited = (!scope.is_superuser).then(|| format!("create-workspace:{}", scope.user_id));
    if let Some(key) = &limited {
        let (made, retry_after) = state.store.rate_count(key, 3600).await?;
        if made >= state.config.rate_limits.workspaces_per_hour {
            return Err(Error::rate_limited(retry_after));
        }
    }
    let workspace = state.store.create_workspace(scope, name, description).await?;
    if let Some(key) = limited {
        // The workspace is made: counted in a task of its own (awaited, but not cancelled with
        // the request), so neither a client gone meanwhile nor a slow database keeps it from
        // the count or answers it with an error.
        let store = state.store.clone();
        let counted = tokio::spawn(async move {
            if let Err(e) = store.count_attempt(&key, 3600).await {
                tracing::warn!(error = %e.detail, "a workspace made was not counted against its creator's hourly limit");
            }
        });
        let _ = counted.await;
    }
    Ok(workspace)
}

/// Invites `emails` to a workspace with `role` (a manager of its members, who may grant that
/// role), mailing each a token; addresses that cannot be invited come back with a reason. Each
/// mail counts against the workspace's and its sender's hourly limits and its address's
/// (`rate_limits`): an address past its own is named with the reason, as are the rest of the
/// list once the workspace or sender reaches theirs part-way (a list that reaches one at once
/// is 429).
pub async fn invite(
    state: &AppState,
    inviter: Inviter<'_>,
    workspace: &WorkspaceRef,
    role: Role,
    emails: &[String],
) -> Result<Invited> {
    let (workspace, own) = state
        .store
        .workspace_access(inviter.scope, workspace, Action::ManageMembers)
        .await?;
    inviter.scope.may_grant(own, role)?;
    let mut invited = Invited::default();
    let mut seen = std::collections::HashSet::new();
    for raw in emails {
        let email = normalize_email(raw);
        let obstacle = if !is_email(&email) {
            Some("not an e-mail address")
        } else if !seen.insert(email.clone()) {
            Some("listed twice")
        } else {
            state.store.invitation_obstacle(&workspace, &email).await?
        };
        if let Some(reason) = obstacle {
            invited.not_invited.push((raw.clone(), reason));
            continue;
        }
        match count_invitation(state, inviter.user, &workspace).await {
            Ok(()) => {}
            // The invitations made so far stand and are answered; the rest are named.
            Err(e) if e.code == ErrorCode::RateLimited && !invited.invitations.is_empty() => {
                invited.not_invited.push((raw.clone(), WORKSPACE_LIMIT_REACHED));
                continue;
            }
            Err(e) => return Err(e),
        }
        match count_recipient(state, inviter.user, &email).await {
            Ok(()) => {}
            Err(e) if e.code == ErrorCode::RateLimited => {
                invited.not_invited.push((raw.clone(), RECIPIENT_LIMIT_REACHED));
                continue;
            }
            Err(e) => return Err(e),
        }
        let token = random_token();
        let created = state
            .store
            .create_invitation(
                inviter.scope,
                workspace.id,
                &email,
                role,
                &token_hash(&token),
                expiry(state),
            )
            .await;
        let invitation = match created {
            Ok(invitation) => invitation,
            Err(e) if e.code == ErrorCode::Conflict => {
                invited.not_invited.push((raw.clone(), TOO_MANY_PENDING));
                continue;
            }
            Err(e) => return Err(e),
        };
        mail_invitation(state, inviter.user, &workspace, &invitation, &token).await?;
        invited.invitations.push(invitation);
    }
    Ok(invited)
}

/// Mails a pending invitation again with a fresh token (the old one stops working).
pub async fn resend_invitation(
    state: &AppState,
    inviter: Inviter<'_>,
    workspace: &WorkspaceRef,
    invitation_id: i64,
) -> Result<Invitation> {
    let (found, _) = state
        .store
        .workspace_access(inviter.scope, workspace, Action::ManageMembers)
        .await?;
    let (pending, _) = state
        .store
        .pending_invitation(inviter.scope, workspace, invitation_id)
        .await?;
    count_invitation(state, inviter.user, &found).await?;
    count_recipient(state, inviter.user, &pending.email).await?;
    let token = random_token();
    let invitation = state
        .store
        .renew_invitation(
            inviter.scope,
            workspace,
            invitation_id,
            &token_hash(&token),
            expiry(state),
        )
        .await?;
    mail_invitation(state, inviter.user, &found, &invitation, &token).await?;
    Ok(invitation)
}

/// Why an address is not invited once the workspace's hourly limit is reached part-way
/// through a list (a list that reaches it with its first address is answered 429).
const WORKSPACE_LIMIT_REACHED: &str = "the workspace, or you, have sent as many invitations as may be sent this hour";

/// Why an address is not invited when it has had its hourly share of invitation mails.
const RECIPIENT_LIMIT_REACHED: &str = "this address has had as many invitation mails as it may get this hour";

/// Every invitation mailed counts against the workspace's hourly limit and its sender's, over
/// all their workspaces (429 past either).
async fn count_invitation(state: &AppState, sender: &User, workspace: &Workspace) -> Result<()> {
    let limits = state.config.rate_limits;
    let store = &state.store;
    store
        .hit_rate_limit(&format!("invite:{}", workspace.id), limits.invitations_per_hour, 3600)
        .await?;
    store
        .hit_rate_limit(
            &format!("invite-by:{}", sender.id),
            limits.invitations_per_user_per_hour,
            3600,
        )
        .await
}

/// Every invitation mailed counts against its address's hourly limits (counted under the
/// address's digest; 429 past either): from its sender, whatever the workspace, and from all
/// senders. One account cannot flood an inbox, and keeping an address from its invitations
/// takes several.
async fn count_recipient(state: &AppState, sender: &User, email: &str) -> Result<()> {
    let limits = state.config.rate_limits;
    let to = format!("invite-mail:to:{}", token_hash(email));
    state
        .store
        .hit_rate_limit(
            &format!("{to}:from:{}", sender.id),
            limits.invitation_mails_per_recipient_and_sender_per_hour,
            3600,
        )
        .await?;
    state
        .store
        .hit_rate_limit(&to, limits.invitation_mails_per_recipient_per_hour, 3600)
        .await
}

fn expiry(state: &AppState) -> Timestamp {
    Timestamp::now().plus_seconds(state.config.invitation_lifetime_secs)
}

async fn mail_invitation(
    state: &AppState,
    inviter: &User,
    workspace: &Workspace,
    invitation: &Invitation,
    token: &str,
) -> Result<()> {
    let text = format!(
        // Names are quoted with escapes ({:?}), so a stored name can never add lines to the mail.
        "{:?} invited you to the Lector workspace {:?} as {}.\n\n\
         Token: {token}\n\n\
         To accept, open {public}/app/accept-invitation?token={token}\n\
         or POST to {public}/organizations/users/invite/accept the JSON fields token,\n\
         password, first_name and last_name.\n\
         If you have an account already, give its password.\n\
         The invitation expires at {}.\n",
        inviter.email,
        workspace.name,
        invitation.role,
        invitation.expires.to_rfc3339(),
        public = state.config.public_url(),
    );
    let mail = MailPayload {
        to: invitation.email.clone(),
        subject: "You are invited to a Lector workspace".into(),
        advice: "resend the invitation".into(),
    };
    state.store.queue_mail(&mail, &text, Some(inviter.id)).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_pending_invitations_reason_names_the_limit() {
        let limit = lector_store::MAX_PENDING_INVITATIONS.to_string();
        assert!(super::TOO_MANY_PENDING.contains(&format!("has {limit} pending")));
    }
}
