//! Each set of names is written once: serde, parsing and display agree with
//! it, and an unknown name is refused with the whole list.

use retention_sim::model::{FaultConfig, FaultKnob, Flaw, Named, OpKind};

fn round_trips<T>()
where
    T: Named + std::fmt::Display + std::str::FromStr + PartialEq + std::fmt::Debug,
    T: serde::Serialize + serde::de::DeserializeOwned,
    <T as std::str::FromStr>::Err: std::fmt::Debug,
{
    for &item in T::ALL {
        let name = item.name();
        assert_eq!(item.to_string(), name);
        assert_eq!(name.parse::<T>().unwrap(), item);
        let json = serde_json::to_string(&item).unwrap();
        assert_eq!(json, format!("\"{name}\""));
        assert_eq!(serde_json::from_str::<T>(&json).unwrap(), item);
    }
    let error = T::from_name("nonsense").unwrap_err().to_string();
    assert!(error.starts_with(&format!("unknown {} \"nonsense\"; known: ", T::WHAT)));
    for name in T::names() {
        assert!(error.contains(name), "{error}");
    }
}

#[test]
fn names_agree_everywhere() {
    round_trips::<OpKind>();
    round_trips::<Flaw>();
    round_trips::<FaultKnob>();
}

#[test]
fn fault_knobs_are_the_config_fields() {
    let config = serde_json::to_value(FaultConfig::default()).unwrap();
    let fields: Vec<&str> = config
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut names = FaultKnob::names();
    names.sort_unstable();
    assert_eq!(fields, names, "one knob per FaultConfig field");
    for (index, &knob) in FaultKnob::ALL.iter().enumerate() {
        let mut faults = FaultConfig::default();
        faults.set(knob, index as u64 + 1).unwrap();
        let value = serde_json::to_value(&faults).unwrap();
        assert_eq!(
            value[knob.name()],
            index as u64 + 1,
            "{knob} sets its own field"
        );
        assert_eq!(faults.get(knob), index as u64 + 1);
    }
    let mut faults = FaultConfig::default();
    let refused = faults.set(FaultKnob::RejectPermille, 1_001).unwrap_err();
    assert_eq!(refused, "1001 is above 1000 per mille");
    assert_eq!(
        faults,
        FaultConfig::default(),
        "a refused value changes nothing"
    );
}
