-- Health of a TeamSpace (platform.labhub.io/v1alpha1) for Argo CD, in its
-- resource_customizations layout. The hook reports condition Ready, and
-- beside a Ready that is not True either Reconciling (on its way) or
-- Stalled (a person must act: an invalid spec kept, a name taken, the
-- requester's allowance, the platform's limits, a reserved owner).
--   Healthy      Ready True, for the generation asked
--   Degraded     Stalled True
--   Progressing  anything else: no status yet, a newer generation than the
--                controller has seen, Reconciling, being deleted (the
--                archive record first, then the namespace), or a status
--                this check does not know; it never fails on bad input
-- It uses the base and table libraries only, as Argo CD runs a check from
-- its ConfigMap (resource.customizations.health.platform.labhub.io_TeamSpace).
hs = {}
hs.status = "Progressing"
hs.message = "Waiting for the TeamSpace controller"

local function describe(c)
  local text = ""
  if c.reason ~= nil then
    text = tostring(c.reason)
  end
  if c.message ~= nil and c.message ~= "" then
    if text ~= "" then
      text = text .. ": "
    end
    text = text .. tostring(c.message)
  end
  return text
end

if obj.status == nil or type(obj.status) ~= "table" then
  return hs
end

local generation = nil
if type(obj.metadata) == "table" then
  generation = obj.metadata.generation
  if obj.metadata.deletionTimestamp ~= nil then
    hs.message = "Being deleted: the archive record first, then the namespace"
  end
end
local observed = obj.status.observedGeneration
if type(generation) == "number" and type(observed) == "number" and observed < generation then
  hs.message = "Waiting for the controller to act on generation " .. tostring(generation)
  return hs
end

local ready = nil
local stalled = nil
if type(obj.status.conditions) == "table" then
  for _, c in ipairs(obj.status.conditions) do
    if type(c) == "table" then
      if c.type == "Ready" then
        ready = c
      elseif c.type == "Stalled" and c.status == "True" then
        stalled = c
      end
    end
  end
end

local deleting = type(obj.metadata) == "table" and obj.metadata.deletionTimestamp ~= nil
if stalled ~= nil and not deleting then
  hs.status = "Degraded"
  hs.message = describe(stalled)
  return hs
end
if ready ~= nil then
  if ready.status == "True" and not deleting then
    hs.status = "Healthy"
  end
  if describe(ready) ~= "" then
    hs.message = describe(ready)
  end
end
return hs
