use super::super::super::testing::TempDir;
use super::*;

fn props(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

#[test]
fn config_sections_need_the_profile_prefix_and_credentials_sections_must_not_have_it() {
    let config = "\
[default]
region = us-east-1
[profile dev]
region = eu-west-1
[staging]
region = ignored-without-prefix
[profile   spaced  ] ; a comment after the header
region = ap-south-1
";
    let parsed = parse(config, FileKind::Config);
    assert_eq!(parsed["default"], props(&[("region", "us-east-1")]));
    assert_eq!(parsed["dev"], props(&[("region", "eu-west-1")]));
    assert_eq!(parsed["spaced"], props(&[("region", "ap-south-1")]));
    assert!(!parsed.contains_key("staging"));

    let credentials = "\
[dev]
aws_access_key_id = AKIDDEV
[profile prod]
aws_access_key_id = ignored-with-prefix
";
    let parsed = parse(credentials, FileKind::Credentials);
    assert_eq!(parsed["dev"], props(&[("aws_access_key_id", "AKIDDEV")]));
    assert!(!parsed.contains_key("prod") && !parsed.contains_key("profile prod"));
}

#[test]
fn profile_default_beats_a_bare_default_in_the_config_file_in_either_order() {
    for config in [
        "[default]\nregion = bare\n[profile default]\nregion = prefixed\n",
        "[profile default]\nregion = prefixed\n[default]\nregion = bare\noutput = json\n",
    ] {
        let parsed = parse(config, FileKind::Config);
        assert_eq!(parsed["default"], props(&[("region", "prefixed")]), "{config}");
    }
}

#[test]
fn comments_blank_lines_and_sub_properties_are_skipped() {
    let config = "\
# leading comment
[profile dev]
; another comment
region=eu-west-1

s3 =
  max_concurrent_requests = 10
\tsignature_version = s3v4
aws_access_key_id   =   AKID WITH SPACES  
";
    let parsed = parse(config, FileKind::Config);
    assert_eq!(
        parsed["dev"],
        props(&[("region", "eu-west-1"), ("s3", ""), ("aws_access_key_id", "AKID WITH SPACES")])
    );
}

#[test]
fn a_profile_merges_both_files_and_the_credentials_file_wins() {
    let dir = TempDir::new();
    let config =
        dir.write("conf", "[profile dev]\nregion = eu-west-1\naws_access_key_id = FROM-CONFIG\n");
    let credentials = dir
        .write("creds", "[dev]\naws_access_key_id = FROM-CREDENTIALS\naws_secret_access_key = s\n");
    let env = Env::from_pairs([
        ("AWS_CONFIG_FILE", config.display().to_string()),
        ("AWS_SHARED_CREDENTIALS_FILE", credentials.display().to_string()),
    ]);
    let p = load(&env, "dev").unwrap().unwrap();
    assert_eq!(p.get("aws_access_key_id"), Some("FROM-CREDENTIALS"));
    assert_eq!(p.get("region"), Some("eu-west-1"));
    assert_eq!(p.found_in, [config, credentials]);
    assert_eq!(load(&env, "absent").unwrap(), None);
}

#[test]
fn the_files_default_to_home_dot_aws_and_a_missing_one_is_no_error() {
    let dir = TempDir::new();
    dir.write(".aws/credentials", "[default]\naws_access_key_id = HOME-KEY\n");
    let env = Env::from_pairs([("HOME", dir.path().display().to_string())]);
    let p = load(&env, "default").unwrap().unwrap();
    assert_eq!(p.get("aws_access_key_id"), Some("HOME-KEY"));
    assert_eq!(p.found_in, [dir.path().join(".aws/credentials")]);
    let nowhere = Env::from_pairs([("HOME", dir.path().join("nobody").display().to_string())]);
    assert_eq!(load(&nowhere, "default").unwrap(), None);
}

#[test]
fn an_unreadable_file_is_an_error_naming_it() {
    let dir = TempDir::new();
    // A directory where the file should be.
    let env = Env::from_pairs([("AWS_CONFIG_FILE", dir.path().display().to_string())]);
    let err = load(&env, "default").unwrap_err();
    let CredentialError::Config { source_name, message } = err else { panic!("{err:?}") };
    assert_eq!(source_name, dir.path().display().to_string());
    assert!(message.starts_with("cannot read it"), "{message}");
}

#[test]
fn the_profile_and_region_come_from_the_environment_first() {
    let p = Profile { properties: props(&[("region", "from-profile")]), found_in: vec![] };
    let region = |pairs: &[(&str, &str)]| super::region(&Env::from_pairs(pairs.to_vec()), Some(&p));
    assert_eq!(region(&[]).as_deref(), Some("from-profile"));
    assert_eq!(region(&[("AWS_DEFAULT_REGION", "default-var")]).as_deref(), Some("default-var"));
    let both = [("AWS_REGION", "region-var"), ("AWS_DEFAULT_REGION", "default-var")];
    assert_eq!(region(&both).as_deref(), Some("region-var"));
    assert_eq!(selected(&Env::from_pairs([("AWS_PROFILE", "dev")])), "dev");
    assert_eq!(selected(&Env::from_pairs([("AWS_PROFILE", "")])), "default");
}
