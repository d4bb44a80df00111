/** The Regulations page's users box: one user a line, `userId kind=value …`, quoted values for spaces, quotes or `=`. */
import { expect, test } from "bun:test";
import { parseUsers } from "../../src/dashboard/ui/pages/regulations/parse-users";

test("one user a line: the userId, then kind=value identifiers; blank lines skipped", () => {
  expect(parseUsers("u1\n\n  u2 email=jane@example.com phone=+15550100 crmId=c-9  \n")).toEqual({
    users: [{ userId: "u1" }, { userId: "u2", email: "jane@example.com", phone: "+15550100", crmId: "c-9" }],
  });
  expect(parseUsers("userId=u3 note=a=b")).toEqual({ users: [{ userId: "u3", note: "a=b" }] });
});

test("a double-quoted value keeps spaces, '=' and markup as they are (JSON escapes)", () => {
  expect(parseUsers('"user one" email="<img src=x onerror=alert(1)>" name="Jane \\"JD\\" Doe"')).toEqual({
    users: [{ userId: "user one", email: "<img src=x onerror=alert(1)>", name: 'Jane "JD" Doe' }],
  });
});

test("a kind named like an Object property is an ordinary identifier", () => {
  const { users } = parseUsers("u1 __proto__=x constructor=y");
  expect(Object.getPrototypeOf(users![0])).toBe(Object.prototype);
  expect(Object.keys(users![0]!)).toEqual(["userId", "__proto__", "constructor"]);
});

test("mistakes are named with their line", () => {
  expect(parseUsers("ok\nbad-user email").error).toBe("Users, line 2: 'email' is not kind=value (e.g. email=jane@example.com)");
  expect(parseUsers("u1 email=a email=b").error).toBe("Users, line 1: 'email' is given twice");
  expect(parseUsers("email=a@b.c").error).toBe("Users, line 1: start with the userId, then add identifiers as kind=value");
  expect(parseUsers('u1 name="Jane"Doe').error).toStartWith("Users, line 1: put a space after");
  expect(parseUsers('u1 name="bad \\q"').error).toStartWith("Users, line 1: the quoted value");
  expect(parseUsers('"" x=1').error).toBe("Users, line 1: the userId is empty");
  expect(parseUsers(" \n ").error).toBe("Users: list at least one userId");
});
