//! The schema's own rules: every default passes its key's check, names are unique, messages
//! read as documented.

use super::*;

#[test]
fn every_default_passes_its_own_check_unchanged() {
    for key in BROKER_KEYS.iter().chain(NAMESRV_KEYS) {
        if let Some(default) = key.default {
            let checked = key
                .check(default)
                .unwrap_or_else(|e| panic!("{}: {e}", key.name));
            assert_eq!(
                checked.text, default,
                "{} default is not canonical",
                key.name
            );
            assert_eq!(checked.note, None, "{}", key.name);
        }
    }
}

#[test]
fn names_are_unique_per_table() {
    for table in [BROKER_KEYS, NAMESRV_KEYS] {
        let mut names: Vec<_> = table.iter().map(|k| k.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
    }
}

#[test]
fn refusals_name_key_value_and_what_is_allowed() {
    let e = check_broker_value("flushDiskType", " FAST ").unwrap_err();
    assert_eq!(
        e.to_string(),
        "flushDiskType = 'FAST' is not allowed; use ASYNC_FLUSH or SYNC_FLUSH"
    );
    let e = check_broker_value("fileReservedTime", "-1").unwrap_err();
    assert_eq!(
        e.to_string(),
        "fileReservedTime = '-1' is not allowed; use an integer from 0 to 876000 (hours to keep \
         a file)"
    );
    let e = check_broker_value("messageDelayLevel", "1s 5x").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("messageDelayLevel = '1s 5x' is not allowed (level 2 ('5x') needs a unit"),
        "{e}"
    );
    let e = check_broker_value("noSuchKey", "1").unwrap_err();
    assert_eq!(e.to_string(), "noSuchKey is not a broker.conf key");
    let e = check_broker_value("brokerPermission", "5").unwrap_err();
    assert!(e
        .to_string()
        .ends_with("; use 6 (read and write), 4 (read only) or 2 (write only)"));
}

#[test]
fn values_come_back_canonical_and_clamped_as_rocketmq_does() {
    let c = check_broker_value("diskMaxUsedSpaceRatio", "99").unwrap();
    assert_eq!(c.text, "95");
    assert!(c.note.unwrap().contains("outside 10-95; using 95"));
    assert_eq!(
        check_broker_value("diskMaxUsedSpaceRatio", "101").ok(),
        None
    );
    assert_eq!(
        check_broker_value("registerNameServerPeriod", "5000")
            .unwrap()
            .text,
        "10000"
    );
    assert_eq!(
        check_broker_value("autoCreateTopicEnable", "TRUE")
            .unwrap()
            .text,
        "true"
    );
    assert_eq!(check_broker_value("brokerId", "+007").unwrap().text, "7");
    assert_eq!(
        check_broker_value("messageDelayLevel", " 1s\t2m ")
            .unwrap()
            .text,
        "1s 2m"
    );
    assert_eq!(
        check_broker_value("namesrvAddr", " a:1 ; [::1]:9876; ")
            .unwrap()
            .text,
        "a:1;[::1]:9876"
    );
    for bad in ["127.0.0.1", "127.0.0.1:99999", "h:0", ":1"] {
        assert!(check_broker_value("namesrvAddr", bad).is_err(), "{bad}");
    }
    assert!(check_broker_value("mappedFileSizeConsumeQueue", "1001").is_err());
    assert!(check_broker_value("fileReservedTime", "0").is_ok());
}

#[test]
fn delay_levels_parse_strictly() {
    assert_eq!(parse_delay_levels(DEFAULT_DELAY_LEVELS).unwrap().len(), 18);
    assert_eq!(
        parse_delay_levels(" 1s  2m 3h 1d ").unwrap(),
        [1_000, 120_000, 10_800_000, 86_400_000]
    );
    for bad in [
        "",
        "  ",
        "0s",
        "-1s",
        "+1s",
        "1.5s",
        "s",
        "1S",
        "1s,2s",
        "99999999999999999d",
    ] {
        assert!(parse_delay_levels(bad).is_err(), "{bad:?} accepted");
    }
    assert!(parse_delay_levels("99999999999999999d")
        .unwrap_err()
        .contains("is too long"));
}

#[test]
fn delete_when_tolerates_blanks_and_a_trailing_separator() {
    assert_eq!(parse_delete_when(" 16; 04 ;").unwrap(), [4, 16]);
    for bad in ["", ";", "24", "4am", "+4", "004"] {
        assert!(parse_delete_when(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn quote_matches_pythons_repr() {
    assert_eq!(quote("FAST"), "'FAST'");
    assert_eq!(quote("it's"), "\"it's\"");
    assert_eq!(quote("a'b\"c"), "'a\\'b\"c'");
    assert_eq!(quote("a\\b\tc"), "'a\\\\b\\tc'");
}
