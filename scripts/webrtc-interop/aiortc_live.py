import asyncio, os, time
from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import AudioStreamTrack, VideoStreamTrack
async def main():
    for f in ("live_offer.sdp", "live_answer.sdp"):
        if os.path.exists(f): os.remove(f)
    pc = RTCPeerConnection()
    @pc.on("iceconnectionstatechange")
    def _(): print("aiortc ICE state:", pc.iceConnectionState, flush=True)
    pc.addTransceiver(AudioStreamTrack(), direction="sendonly")
    pc.addTransceiver(VideoStreamTrack(), direction="sendonly")
    await pc.setLocalDescription(await pc.createOffer())
    open("live_offer.sdp.tmp", "w").write(pc.localDescription.sdp); os.rename("live_offer.sdp.tmp", "live_offer.sdp")
    for _ in range(300):
        if os.path.exists("live_answer.sdp"): break
        await asyncio.sleep(0.1)
    await pc.setRemoteDescription(RTCSessionDescription(sdp=open("live_answer.sdp").read(), type="answer"))
    await asyncio.sleep(8)
    print("aiortc final ICE state:", pc.iceConnectionState)
    await pc.close()
asyncio.run(main())
