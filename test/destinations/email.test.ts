import { expect, test } from "bun:test";
import { isEmail } from "../../src/destinations/shared";

/**
 * RudderStack checks e-mail addresses with validator.js's `isEmail` (13.15.22, default options).
 * The lists below are validator.js's own test list for `isEmail` with its default options
 * (test/validators.test.js at 13.15.22; validator.js is MIT licensed, Copyright (c) 2018 Chris
 * O'Hara), non-ASCII characters written as escapes. OTHER_VALID and OTHER_INVALID are the
 * addresses of that file's tests of other options, with the answer validator 13.15.22 itself
 * gives each under the default options.
 */
const VALID = [
  "foo@bar.com",
  "x@x.au",
  "foo@bar.com.au",
  "foo+bar@bar.com",
  "hans.m\u7aefller@test.com",
  "hans@m\u7aefller.com",
  "test|123@m\u7aefller.com",
  "test123+ext@gmail.com",
  "some.name.midd.leNa.me.and.locality+extension@GoogleMail.com",
  "\"foobar\"@example.com",
  "\"  foo  m\u7aefller \"@example.com",
  "\"foo\\@bar\"@example.com",
  "a".repeat(64) + "@" + "a".repeat(63) + ".com",
  "a".repeat(64) + "@" + "a".repeat(63) + ".com",
  "a".repeat(31) + "@gmail.com",
  "test@gmail.com",
  "test.1@gmail.com",
  "test@1337.com",
];
const INVALID = [
  "invalidemail@",
  "invalid.com",
  "@invalid.com",
  "foo@bar.com.",
  "foo@_bar.com",
  "somename@\uff47\uff4d\uff41\uff49\uff4c.com",
  "foo@bar.co.uk.",
  "z@co.c",
  "\uff47\uff4d\uff41\uff49\uff4c\uff47\uff4d\uff41\uff49\uff4c\uff47\uff4d\uff41\uff49\uff4c\uff47\uff4d\uff41\uff49\uff4c\uff47\uff4d\uff41\uff49\uff4c@gmail.com",
  "a".repeat(64) + "@" + "a".repeat(251) + ".com",
  "a".repeat(65) + "@" + "a".repeat(250) + ".com",
  "a".repeat(64) + "@" + "a".repeat(64) + ".com",
  "a".repeat(64) + "@" + "a".repeat(63) + "." + "a".repeat(63) + "." + "a".repeat(63) + "." + "a".repeat(58) + ".com",
  "test1@invalid.co\u2006m",
  "test2@invalid.co\u2002m",
  "test3@invalid.co\u2004m",
  "test4@invalid.co\u2005m",
  "test5@invalid.co\u2006m",
  "test6@invalid.co\u2007m",
  "test7@invalid.co\u2008m",
  "test8@invalid.co\u2009m",
  "test9@invalid.co\u200am",
  "test10@invalid.co\u202fm",
  "test11@invalid.co\u205fm",
  "test12@invalid.co\u3000m",
  "test13@invalid.co\u3000m",
  "multiple..dots@stillinvalid.com",
  "test123+invalid! sub_address@gmail.com",
  "gmail...ignores...dots...@gmail.com",
  "ends.with.dot.@gmail.com",
  "multiple..dots@gmail.com",
  "wrong()[]\",:;<>@@gmail.com",
  "\"wrong()[]\",:;<>@@gmail.com",
  "username@domain.com\ufffd",
  "username@domain.com\u00a9",
  "nbsp\u00a0test@test.com",
  "nbsp_test@te\u00a0st.com",
  "nbsp_test@test.co\u00a0m",
  "\"foobar@gmail.com",
  "\"foo\"bar@gmail.com",
  "foo\"bar\"@gmail.com",
];
const OTHER_VALID = [
  "foobar@gmail.com",
  "foo.bar@gmail.com",
  "foo.bar@googlemail.com",
  "a".repeat(30) + "@gmail.com",
  "some.name.midd.leNa.me+extension@GoogleMail.com",
  "\"  foo  bar  \"@example.com",
  "t\u00fcst@invalid.com",
  "emil@gmail.com",
  "email@gmail.com",
  "\"foobr\"@example.com",
  "\" foo m\u7aefller \"@example.com",
  "\"foo@br\"@example.com",
  "email@foo.gmail.com",
  "foo+bar@gmail.com",
  "email@foo.bar.com",
  "email@foobar.com",
  "email@qux.com",
  "email@bar.com",
  "email@foo.com",
  "email@a.b.c.foo.com",
  "test@foo.bar.com",
  "foo+bar@test.com",
];
const OTHER_INVALID = [
  ".foobar@gmail.com",
  "foobar@my_sarisari_store.typepad.com",
  "Some Name <foo@bar.com>",
  "Some Name <x@x.au>",
  "Some Name <foo@bar.com.au>",
  "Some Name <foo+bar@bar.com>",
  "Some Name <hans.m\u7aefller@test.com>",
  "Some Name <hans@m\u7aefller.com>",
  "Some Name <test|123@m\u7aefller.com>",
  "Some Name <test123+ext@gmail.com>",
  "'Foo Bar, Esq'<foo@bar.com>",
  "Some Name <some.name.midd.leNa.me+extension@GoogleMail.com>",
  "Some Middle Name <some.name.midd.leNa.me+extension@GoogleMail.com>",
  "Name <some.name.midd.leNa.me+extension@GoogleMail.com>",
  "Name<some.name.midd.leNa.me+extension@GoogleMail.com>",
  "Some Name <foo@gmail.com>",
  "Name\ud83c\udf53With\ud83c\udf51Emoji\ud83d\udeb4\u200d\u2640\ufe0f\ud83c\udfc6<test@aftership.com>",
  "\ud83c\udf47\ud83c\udf57\ud83c\udf51<only_emoji@aftership.com>",
  "\"<displayNameInBrackets>\"<jh@gmail.com>",
  "\"\\\"quotes\\\"\"<jh@gmail.com>",
  "\"name;\"<jh@gmail.com>",
  "\"name;\" <jh@gmail.com>",
  "Some Name <invalidemail@>",
  "Some Name <invalid.com>",
  "Some Name <@invalid.com>",
  "Some Name <foo@bar.com.>",
  "Some Name <foo@bar.co.uk.>",
  "Some Name foo@bar.co.uk.>",
  "Some Name <foo@bar.co.uk.",
  "Some Name < foo@bar.co.uk >",
  "Name foo@bar.co.uk",
  "Some Name <some..name@gmail.com>",
  "Some Name<emoji_in_address\ud83c\udf48@aftership.com>",
  "invisibleCharacter\u001f<jh@gmail.com>",
  "<displayNameInBrackets><jh@gmail.com>",
  "\\\"quotes\\\"<jh@gmail.com>",
  "\"\"quotes\"\"<jh@gmail.com>",
  "name;<jh@gmail.com>",
  "    <jh@gmail.com>",
  "\"    \"<jh@gmail.com>",
  "email@[123.123.123.123]",
  "email@255.255.255.255",
  "email@0.0.0.256",
  "email@26.0.0.256",
  "email@[266.266.266.266]",
  "Deleted-user-id-19430-Team-5051deleted-user-id-19430-team-5051XXXXXX@example.com",
  "Deleted-user-id-19430-Team-5051deleted-user-id-19430-team-5051XXXXXX@Deleted-user-id-19430-Team-5051deleted-user-id-19430-team-5051XXXXXX.com",
];

test("isEmail agrees with validator.js's isEmail test list for the default options", () => {
  for (const email of VALID) expect([email, isEmail(email)]).toEqual([email, true]);
  for (const email of INVALID) expect([email, isEmail(email)]).toEqual([email, false]);
});

test("isEmail agrees with validator.js's default answer for the addresses of its other isEmail tests", () => {
  for (const email of OTHER_VALID) expect([email, isEmail(email)]).toEqual([email, true]);
  for (const email of OTHER_INVALID) expect([email, isEmail(email)]).toEqual([email, false]);
});

test("isEmail: the rules behind issue 50's addresses, and values that are no text", () => {
  // Empty atoms: a leading, trailing or doubled dot in the local part.
  for (const email of [".vanderberg@example.com", "vanderberg.@example.com", "van..derberg@example.com"]) expect(isEmail(email)).toBe(false);
  // A quoted local part is taken whole; a lone quote counts as an empty quoted part, as there.
  expect(isEmail('"van der berg"@example.com')).toBe(true);
  expect(isEmail('"@example.com')).toBe(true);
  expect(isEmail('"van@example.com')).toBe(false);
  // 64 bytes of local part (UTF-8), 63 characters a label, 254 characters in all.
  expect(isEmail(`${"é".repeat(32)}@example.com`)).toBe(true);
  expect(isEmail(`${"é".repeat(33)}@example.com`)).toBe(false);
  expect(isEmail(`a@${"b".repeat(63)}.com`)).toBe(true);
  expect(isEmail(`a@${"b".repeat(64)}.com`)).toBe(false);
  // A TLD of letters (two or more) or punycode; no numeric TLD, no IP literal, no underscore.
  expect(isEmail("a@example.museum")).toBe(true);
  expect(isEmail("a@xn--p1ai.xn--p1ai")).toBe(true);
  for (const email of ["a@example.c0m", "a@1.2.3.4", "a@[1.2.3.4]", "a@ex_ample.com", "a@-example.com", "a@example-.com"]) expect(isEmail(email)).toBe(false);
  // A lone surrogate makes validator's byte count throw; it is no address here.
  expect(isEmail("\ud800@example.com")).toBe(false);
  for (const value of [undefined, null, 12345, true, ["a@example.com"], { email: "a@example.com" }]) expect(isEmail(value)).toBe(false);
});
