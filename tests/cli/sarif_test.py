#!/usr/bin/env python3
"""`fhr-plan check --format sarif` against the SARIF 2.1.0 specification.

The OASIS schema is not vendored (the project copies no third-party files);
instead this checks what the schema requires of every object fhr-plan
writes: the properties each object may have (the schema's
additionalProperties: false), the required ones, their types, enums and
minimums, uri formats, and the cross references (ruleIndex, descriptor
index, uriBaseId). Then it checks what a CI user needs: a syntax error is a
result with the right rule, region and helpUri, and so on.

usage: sarif_test.py path/to/fhr-plan   (from the repository root)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

TOOL = sys.argv[1]
failures = []

# object -> (allowed properties, required properties); from SARIF 2.1.0 §3.
SPEC = {
    "sarifLog": ({"$schema", "version", "runs", "inlineExternalProperties", "properties"}, {"version", "runs"}),
    "run": ({"tool", "invocations", "conversion", "language", "versionControlProvenance", "originalUriBaseIds",
             "artifacts", "logicalLocations", "graphs", "results", "automationDetails", "runAggregates",
             "baselineGuid", "redactionTokens", "defaultEncoding", "defaultSourceLanguage", "newlineSequences",
             "columnKind", "externalPropertyFileReferences", "threadFlowLocations", "taxonomies", "addresses",
             "translations", "policies", "webRequests", "webResponses", "specialLocations", "properties"},
            {"tool"}),
    "tool": ({"driver", "extensions", "properties"}, {"driver"}),
    "toolComponent": ({"guid", "name", "organization", "product", "productSuite", "shortDescription",
                       "fullDescription", "fullName", "version", "semanticVersion", "dottedQuadFileVersion",
                       "releaseDateUtc", "downloadUri", "informationUri", "globalMessageStrings",
                       "notifications", "rules", "taxa", "locations", "language", "contents",
                       "isComprehensive", "localizedDataSemanticVersion",
                       "minimumRequiredLocalizedDataSemanticVersion", "associatedComponent",
                       "translationMetadata", "supportedTaxonomies", "properties"}, {"name"}),
    "reportingDescriptor": ({"id", "deprecatedIds", "guid", "deprecatedGuids", "name", "deprecatedNames",
                             "shortDescription", "fullDescription", "messageStrings", "defaultConfiguration",
                             "helpUri", "help", "relationships", "properties"}, {"id"}),
    "multiformatMessageString": ({"text", "markdown", "properties"}, {"text"}),
    "reportingConfiguration": ({"enabled", "level", "rank", "parameters", "properties"}, set()),
    "invocation": ({"commandLine", "arguments", "responseFiles", "startTimeUtc", "endTimeUtc", "exitCode",
                    "ruleConfigurationOverrides", "notificationConfigurationOverrides",
                    "toolExecutionNotifications", "toolConfigurationNotifications", "exitCodeDescription",
                    "exitSignalName", "exitSignalNumber", "processStartFailureMessage", "executionSuccessful",
                    "machine", "account", "processId", "executableLocation", "workingDirectory",
                    "environmentVariables", "stdin", "stdout", "stderr", "stdoutStderr", "properties"},
                   {"executionSuccessful"}),
    "notification": ({"locations", "message", "level", "threadId", "timeUtc", "exception", "descriptor",
                      "associatedRule", "properties"}, {"message"}),
    "reportingDescriptorReference": ({"id", "index", "guid", "toolComponent", "properties"}, set()),
    "result": ({"ruleId", "ruleIndex", "rule", "kind", "level", "message", "analysisTarget", "locations", "guid",
                "correlationGuid", "occurrenceCount", "partialFingerprints", "fingerprints", "stacks",
                "codeFlows", "graphs", "graphTraversals", "relatedLocations", "suppressions", "baselineState",
                "rank", "attachments", "hostedViewerUri", "workItemUris", "provenance", "fixes", "taxa",
                "webRequest", "webResponse", "properties"}, {"message"}),
    "message": ({"text", "markdown", "id", "arguments", "properties"}, set()),
    "location": ({"id", "physicalLocation", "logicalLocations", "message", "annotations", "relationships",
                  "properties"}, set()),
    "physicalLocation": ({"address", "artifactLocation", "region", "contextRegion", "properties"}, set()),
    "artifactLocation": ({"uri", "uriBaseId", "index", "description", "properties"}, set()),
    "region": ({"startLine", "startColumn", "endLine", "endColumn", "charOffset", "charLength", "byteOffset",
                "byteLength", "snippet", "message", "sourceLanguage", "properties"}, set()),
    "fix": ({"description", "artifactChanges", "properties"}, {"artifactChanges"}),
    "artifactChange": ({"artifactLocation", "replacements", "properties"}, {"artifactLocation", "replacements"}),
    "replacement": ({"deletedRegion", "insertedContent", "properties"}, {"deletedRegion"}),
    "artifactContent": ({"text", "binary", "rendered", "properties"}, set()),
}
LEVELS = {"none", "note", "warning", "error"}
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"{}|\\^`]*$")          # RFC 3986 absolute
URI_REFERENCE = re.compile(r"^[^\s<>\"{}|\\^`]*$")


def check(kind, obj, where):
    allowed, required = SPEC[kind]
    if not isinstance(obj, dict):
        failures.append(f"{where}: {kind} is not an object")
        return
    for key in obj:
        if key not in allowed:
            failures.append(f"{where}: {kind} may not have '{key}'")
    for key in required:
        if key not in obj:
            failures.append(f"{where}: {kind} lacks required '{key}'")


def check_message(obj, where, kind="message"):
    check(kind, obj, where)
    if kind == "message" and "text" not in obj and "id" not in obj:
        failures.append(f"{where}: a message needs text or id")
    if not isinstance(obj.get("text", ""), str):
        failures.append(f"{where}: message text is not a string")


def check_region(obj, where):
    check("region", obj, where)
    for key in ("startLine", "startColumn", "endLine", "endColumn"):
        if key in obj and (not isinstance(obj[key], int) or obj[key] < 1):
            failures.append(f"{where}: {key} must be an integer >= 1, is {obj[key]!r}")
    if "endLine" in obj and obj["endLine"] < obj.get("startLine", 1):
        failures.append(f"{where}: endLine before startLine")
    if obj.get("endLine", obj.get("startLine")) == obj.get("startLine") and obj.get("endColumn", 10**9) < obj.get("startColumn", 1):
        failures.append(f"{where}: endColumn before startColumn")


def check_artifact_location(obj, where, base_ids):
    check("artifactLocation", obj, where)
    if "uri" in obj and not URI_REFERENCE.match(obj["uri"]):
        failures.append(f"{where}: uri {obj['uri']!r} is not a uri-reference")
    if "uri" in obj and "uriBaseId" not in obj and not obj["uri"].startswith("file:///"):
        failures.append(f"{where}: a uri without a base id must be an absolute file:// URI: {obj['uri']!r}")
    if "uriBaseId" in obj and obj["uriBaseId"] not in base_ids:
        failures.append(f"{where}: uriBaseId {obj['uriBaseId']!r} not in originalUriBaseIds")
    if "uri" not in obj and "description" not in obj:
        failures.append(f"{where}: an artifactLocation without uri needs a description")


def check_physical(obj, where, base_ids):
    check("physicalLocation", obj, where)
    if "artifactLocation" in obj:
        check_artifact_location(obj["artifactLocation"], where + ".artifactLocation", base_ids)
    if "region" in obj:
        check_region(obj["region"], where + ".region")


def validate(log, where):
    check("sarifLog", log, where)
    if log.get("version") != "2.1.0":
        failures.append(f"{where}: version is not 2.1.0")
    if "$schema" in log and not URI.match(log["$schema"]):
        failures.append(f"{where}: $schema is not a URI")
    for r, run in enumerate(log.get("runs", [])):
        w = f"{where}.runs[{r}]"
        check("run", run, w)
        check("tool", run["tool"], w + ".tool")
        driver = run["tool"]["driver"]
        check("toolComponent", driver, w + ".driver")
        rules = driver.get("rules", [])
        ids = [rule.get("id") for rule in rules]
        if len(set(ids)) != len(ids):
            failures.append(f"{w}: rule ids repeat")
        for i, rule in enumerate(rules):
            rw = f"{w}.rules[{i}]"
            check("reportingDescriptor", rule, rw)
            for key in ("shortDescription", "fullDescription"):
                if key in rule:
                    check_message(rule[key], f"{rw}.{key}", "multiformatMessageString")
            if "helpUri" in rule and not URI.match(rule["helpUri"]):
                failures.append(f"{rw}: helpUri {rule['helpUri']!r} is not an absolute URI")
            if "defaultConfiguration" in rule:
                check("reportingConfiguration", rule["defaultConfiguration"], rw + ".defaultConfiguration")
                if rule["defaultConfiguration"].get("level", "warning") not in LEVELS:
                    failures.append(f"{rw}: bad level")
        base_ids = run.get("originalUriBaseIds", {})
        for name, base in base_ids.items():
            check_artifact_location(base, f"{w}.originalUriBaseIds.{name}", {})
            if not base.get("uri", "").endswith("/"):
                failures.append(f"{w}: base uri {name} must end with '/'")
        if run.get("columnKind", "unicodeCodePoints") not in ("utf16CodeUnits", "unicodeCodePoints"):
            failures.append(f"{w}: bad columnKind")
        for i, invocation in enumerate(run.get("invocations", [])):
            iw = f"{w}.invocations[{i}]"
            check("invocation", invocation, iw)
            for j, n in enumerate(invocation.get("toolExecutionNotifications", [])):
                nw = f"{iw}.toolExecutionNotifications[{j}]"
                check("notification", n, nw)
                check_message(n["message"], nw + ".message")
                if n.get("level", "warning") not in LEVELS:
                    failures.append(f"{nw}: bad level")
                if "descriptor" in n:
                    check("reportingDescriptorReference", n["descriptor"], nw + ".descriptor")
                    index = n["descriptor"].get("index", -1)
                    if index >= 0 and ids[index] != n["descriptor"].get("id"):
                        failures.append(f"{nw}: descriptor index {index} is not rule {n['descriptor'].get('id')}")
                for k, location in enumerate(n.get("locations", [])):
                    check("location", location, f"{nw}.locations[{k}]")
                    check_physical(location["physicalLocation"], f"{nw}.locations[{k}].physicalLocation", base_ids)
        for i, result in enumerate(run.get("results", [])):
            rw = f"{w}.results[{i}]"
            check("result", result, rw)
            check_message(result["message"], rw + ".message")
            if result.get("level", "warning") not in LEVELS:
                failures.append(f"{rw}: bad level")
            if "ruleIndex" in result:
                if not isinstance(result["ruleIndex"], int) or result["ruleIndex"] < -1:
                    failures.append(f"{rw}: ruleIndex must be an integer >= -1")
                elif ids[result["ruleIndex"]] != result.get("ruleId"):
                    failures.append(f"{rw}: ruleIndex {result['ruleIndex']} is {ids[result['ruleIndex']]}, not {result.get('ruleId')}")
            if "occurrenceCount" in result and result["occurrenceCount"] < 1:
                failures.append(f"{rw}: occurrenceCount < 1")
            for key, value in result.get("partialFingerprints", {}).items():
                if not isinstance(value, str):
                    failures.append(f"{rw}: fingerprint {key} is not a string")
            for key in ("locations", "relatedLocations"):
                for k, location in enumerate(result.get(key, [])):
                    check("location", location, f"{rw}.{key}[{k}]")
                    if "message" in location:
                        check_message(location["message"], f"{rw}.{key}[{k}].message")
                    if "id" in location and (not isinstance(location["id"], int) or location["id"] < -1):
                        failures.append(f"{rw}: location id must be an integer >= -1")
                    check_physical(location["physicalLocation"], f"{rw}.{key}[{k}].physicalLocation", base_ids)
            for k, fix in enumerate(result.get("fixes", [])):
                fw = f"{rw}.fixes[{k}]"
                check("fix", fix, fw)
                if "description" in fix:
                    check_message(fix["description"], fw + ".description")
                if not fix.get("artifactChanges"):
                    failures.append(f"{fw}: artifactChanges must not be empty")
                for c, change in enumerate(fix.get("artifactChanges", [])):
                    check("artifactChange", change, f"{fw}.artifactChanges[{c}]")
                    check_artifact_location(change["artifactLocation"], f"{fw}.artifactChanges[{c}]", base_ids)
                    if not change.get("replacements"):
                        failures.append(f"{fw}: replacements must not be empty")
                    for rep in change.get("replacements", []):
                        check("replacement", rep, fw + ".replacement")
                        check_region(rep["deletedRegion"], fw + ".deletedRegion")
                        if "insertedContent" in rep:
                            check("artifactContent", rep["insertedContent"], fw + ".insertedContent")


def sarif(args, stdin=None, cwd=None):
    result = subprocess.run([os.path.abspath(TOOL), "check", "--format", "sarif", *args], input=stdin,
                            capture_output=True, text=True, cwd=cwd)
    log = json.loads(result.stdout)
    validate(log, " ".join(args))
    return result.returncode, log


def expect(condition, message):
    if not condition:
        failures.append(message)


with tempfile.TemporaryDirectory() as tmp:
    bad = os.path.join(tmp, "bad.fhr")
    open(bad, "w").write("budget pinned 1 Gib\nvalue w 1 MiB at pinned\n")
    # A syntax error: a result with its rule, location and helpUri (absolute path: a file:// URI).
    code, log = sarif([bad])
    run = log["runs"][0]
    expect(code == 2, f"syntax error: exit {code}")
    results = [r for r in run["results"] if r["ruleId"] == "E0009"]
    expect(len(results) == 1, f"syntax error: {len(results)} E0009 results")
    if results:
        r = results[0]
        rule = run["tool"]["driver"]["rules"][r["ruleIndex"]]
        expect(rule["id"] == "E0009", f"ruleIndex names {rule['id']}")
        expect(rule["helpUri"].endswith("/diagnostics.md#E0009"), f"helpUri {rule['helpUri']}")
        expect(rule["defaultConfiguration"]["level"] == "error", "E0009 is not an error rule")
        expect(rule["fullDescription"]["text"].startswith("Units are case-sensitive"), "fullDescription")
        region = r["locations"][0]["physicalLocation"]["region"]
        expect(region == {"startLine": 1, "startColumn": 17, "endColumn": 20}, f"region {region}")
        uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        expect(uri == "file://" + bad, f"uri {uri}")
        expect(r["level"] == "error" and "did you mean 'GiB'" in r["message"]["text"], r["message"]["text"])
        expect(len(r["partialFingerprints"]["fhrDiagnostic/v1"]) == 16, "fingerprint")
    expect(run["invocations"][0]["executionSuccessful"] is False, "executionSuccessful with an error")
    expect('<a id="E0009"></a>' in open("docs/diagnostics.md").read(), "docs/diagnostics.md has no anchor E0009")

    # Warnings with a fix, notes as related locations, stdin with a name (relative: SRCROOT).
    code, log = sarif(["--stdin-filename", "plans/stage.fhr", "-"],
                      stdin="budget cuda:0 40\nconst c = 1\nconst c = 2\n")
    run = log["runs"][0]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    expect(code == 2 and set(by_rule) == {"W0001", "E0102"}, f"stdin: exit {code}, rules {sorted(by_rule)}")
    if "W0001" in by_rule:
        w = by_rule["W0001"]
        expect(w["level"] == "warning", "W0001 level")
        location = w["locations"][0]["physicalLocation"]["artifactLocation"]
        expect(location == {"uri": "plans/stage.fhr", "uriBaseId": "SRCROOT"}, f"stdin location {location}")
        change = w["fixes"][0]["artifactChanges"][0]["replacements"][0]
        expect(change["insertedContent"]["text"] == "40 B", f"fix {change}")
        expect(change["deletedRegion"] == {"startLine": 1, "startColumn": 15, "endColumn": 17}, f"fix region {change}")
    if "E0102" in by_rule:
        related = by_rule["E0102"]["relatedLocations"][0]
        expect(related["message"]["text"] == "first declared here", f"related {related}")
        expect(related["physicalLocation"]["region"]["startLine"] == 2, f"related {related}")
    expect(run["originalUriBaseIds"]["SRCROOT"]["uri"] == "file://" + os.getcwd() + "/", "SRCROOT uri")

    # Unnamed stdin, a bad --budget and a missing file: notifications, no invalid uri.
    code, log = sarif(["--budget", "cuda=1", "-", os.path.join(tmp, "missing.fhr")], stdin="budget pinned 1\n")
    notes = log["runs"][0]["invocations"][0].get("toolExecutionNotifications", [])
    expect(code == 2 and sorted(n["descriptor"]["id"] for n in notes) == ["E0015", "E0501"],
           f"notifications {notes}")
    for r in log["runs"][0]["results"]:
        expect("uri" not in r["locations"][0]["physicalLocation"]["artifactLocation"], "unnamed stdin has a uri")

    # Infeasible plans and a repeated loop warning.
    code, log = sarif(["examples/infeasible.fhr"])
    failing = [r for r in log["runs"][0]["results"] if r["ruleId"].startswith("fhr/")]
    expect(code == 1 and len(failing) == 2, f"infeasible: exit {code}, {len(failing)} results")
    for r in failing:
        expect(log["runs"][0]["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] == r["ruleId"], "failure ruleIndex")
        expect("endColumn" in r["locations"][0]["physicalLocation"]["region"], "failure endColumn")
    code, log = sarif(["-"], stdin='for i in 0..3 { plan "p{i}" { reserve cuda:0 40 "t" } }\n')
    counts = [r.get("occurrenceCount") for r in log["runs"][0]["results"]]
    expect(counts == [3], f"occurrenceCount {counts}")

for failure in failures:
    print("FAIL", failure)
print(f"sarif_test: {len(failures)} failures")
sys.exit(1 if failures else 0)
