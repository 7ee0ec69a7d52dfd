//! `sim run`'s fault-event flags (`--pause`, `--crash`, ...), one per
//! [`EventFlag`], added from the library's list: a new kind of fault brings
//! its flag with its syntax, and nothing here changes.

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use retention_sim::model::EventFlag;

/// The texts given to each event flag, in [`EventFlag::ALL`]'s order.
#[derive(Clone, Debug, Default)]
pub struct EventFlagTexts {
    given: Vec<(EventFlag, Vec<String>)>,
}

impl EventFlagTexts {
    /// Each flag with the texts given to it, in the order `sim run` adds
    /// their events.
    pub fn iter(&self) -> impl Iterator<Item = (EventFlag, &[String])> {
        self.given
            .iter()
            .map(|(flag, texts)| (*flag, texts.as_slice()))
    }
}

/// The argument's id: the flag without its dashes.
fn id(flag: EventFlag) -> &'static str {
    flag.flag().trim_start_matches("--")
}

impl FromArgMatches for EventFlagTexts {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut texts = Self::default();
        texts.update_from_arg_matches(matches)?;
        Ok(texts)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.given = EventFlag::ALL
            .into_iter()
            .map(|flag| {
                let texts = matches
                    .get_many::<String>(id(flag))
                    .map(|texts| texts.cloned().collect())
                    .unwrap_or_default();
                (flag, texts)
            })
            .collect();
        Ok(())
    }
}

impl Args for EventFlagTexts {
    fn augment_args(mut command: Command) -> Command {
        for flag in EventFlag::ALL {
            let mut arg = Arg::new(id(flag))
                .long(id(flag))
                .value_name(flag.value_name())
                .help(flag.help())
                .action(ArgAction::Append)
                .value_parser(clap::value_parser!(String))
                .allow_hyphen_values(flag.takes_negative());
            if let Some(long_help) = flag.long_help() {
                arg = arg.long_help(long_help);
            }
            command = command.arg(arg);
        }
        command
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}
