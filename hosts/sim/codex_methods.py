"""The request methods the real ``codex app-server`` 0.171.0 knows, in the order it lists
them when it refuses an unknown one (``Invalid request: unknown variant `X`, expected
one of ...``). The simulator answers that refusal word for word."""

from __future__ import annotations

METHODS = tuple(
    """
initialize server/diagnostics userVerification/status userVerification/enroll
userVerification/delete userVerification/verify userVerification/cancel thread/start
thread/resume thread/fork thread/sample thread/sample/cancel thread/archive
thread/delete thread/unsubscribe thread/increment_elicitation
thread/decrement_elicitation thread/name/set thread/prediction/request thread/goal/set
thread/goal/get thread/goal/clear thread/queue/add thread/queue/list thread/queue/update
thread/queue/delete thread/queue/reorder thread/queue/start thread/metadata/update
thread/attachment/add thread/attachment/list thread/attachmentOwner/list
thread/attachment/remove thread/section/move thread/settings/update
thread/memoryMode/set thread/memory/read memory/status memory/reset rollout/compress
thread/unarchive thread/compact/start thread/shellCommand
thread/approveGuardianDeniedAction thread/backgroundTerminals/clean
thread/backgroundTerminals/list thread/backgroundTerminals/terminate thread/revert
thread/list project/list project/read project/create project/import project/update
project/move project/delete threadSection/list threadSection/create threadSection/update
threadSection/delete thread/search thread/search/stream thread/search/cancel
thread/search/stream/cancel thread/searchOccurrences thread/loaded/list thread/read
thread/readState/update thread/turns/list thread/items/list thread/items/read
thread/guardianReview thread/inject_items thread/prepareApprovedPlan skills/list
skills/extraRoots/set hooks/list marketplace/add marketplace/remove marketplace/upgrade
plugin/list plugin/search plugin/installed plugin/reconcile plugin/read
plugin/skill/read plugin/share/save plugin/share/updateTargets plugin/share/list
plugin/share/checkout plugin/share/delete app/read app/list app/installed fs/readFile
fs/writeFile fs/createDirectory fs/getMetadata fs/readDirectory fs/remove fs/copy
fs/watch fs/unwatch skills/config/write plugin/install plugin/uninstall turn/start
turn/settings/update turn/steer turn/interrupt thread/realtime/start
thread/realtime/appendAudio thread/realtime/appendText thread/realtime/appendSpeech
thread/realtime/stop thread/timeline/list thread/realtime/list
thread/realtime/listVoices review/start model/list account/gatewayOAuth/read
account/gatewayOAuth/login account/gatewayOAuth/cancel modelProvider/list
modelProvider/config/write modelProvider/default/set modelProvider/capabilities/read
experimentalFeature/list permissionProfile/list experimentalFeature/enablement/set
remoteControl/enable remoteControl/disable remoteControl/status/read
remoteControl/pairing/start remoteControl/pairing/status remoteControl/client/list
remoteControl/client/revoke collaborationMode/list mock/experimentalMethod
environment/add environment/info environment/status mcpServer/oauth/login
config/mcpServer/reload mcpServerStatus/list mcpServer/resource/read
mcpServer/event/stream/start mcpServer/event/stream/stop mcpServer/tool/call
windowsSandbox/setupStart windowsSandbox/readiness account/login/start
account/bedrock/discover account/bedrock/setup account/gcp/setup
account/bedrock/checkGovCloudRequirements account/login/cancel accountSession/list
accountSession/switch account/logout account/securitySetup/read account/rateLimits/read
account/rateLimitResetCredit/consume account/usage/read account/workspaceMessages/read
account/sendAddCreditsNudgeEmail feedback/upload feedback/save command/exec
command/exec/write command/exec/terminate command/exec/resize process/spawn
process/writeStdin process/kill process/resizePty config/read externalAgentConfig/detect
externalAgentConfig/import externalAgentConfig/import/recordHistory
externalAgentConfig/import/readHistories config/value/write config/batchWrite
configRequirements/read account/read getConversationSummary gitDiffToRemote
getAuthStatus fuzzyFileSearch fuzzyFileSearch/sessionStart fuzzyFileSearch/sessionUpdate
fuzzyFileSearch/sessionStop
""".split()
)
QUEUE_METHODS = tuple(name for name in METHODS if name.startswith("thread/queue/"))


def unknown_method(method: str, queue_api: bool) -> str:
    """The refusal of ``method``; without the queue API its methods are not listed."""
    known = METHODS if queue_api else tuple(m for m in METHODS if m not in QUEUE_METHODS)
    listed = ", ".join(f"`{name}`" for name in known)
    return f"Invalid request: unknown variant `{method}`, expected one of {listed}"
